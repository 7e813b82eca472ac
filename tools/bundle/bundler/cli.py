"""build.py's command line: build a bundle with one of the backends, or verify one."""

import argparse
import json
import os
import shutil
import sys
import time

from . import (conformance, debs, download, elf, gomod, kscore, kubeadm, manifest, monitoring, pyimage,
               runtime, steps, versions)

# Failures with a message of their own: reported without a traceback.
BUILD_ERRORS = (gomod.GoError, debs.DebError, kubeadm.KubeadmError, download.ChecksumError,
                download.DownloadError, elf.ElfError, manifest.ManifestError,
                versions.VersionError, pyimage.ImageError, kscore.KsCoreError,
                conformance.ConformanceError)

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS_BUNDLE = os.path.dirname(HERE)
REPO_ROOT = os.path.dirname(os.path.dirname(TOOLS_BUNDLE))
DEFAULT_OUT = os.path.join(REPO_ROOT, "bundle")
# Outside the checkout, like the Go caches: a fresh clone (CI) reuses the steps built before.
DEFAULT_CACHE = os.environ.get("SLIPWAY_BUNDLE_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
    "slipway", "bundle")
BUILD_STAMP = ".build-stamp"
BACKENDS = ("source", "download")
# What `--without` can leave out of a bundle: images that only some clusters run. A cluster that needs them and a
# bundle without them is refused by the cluster model, naming the build that adds them.
#   kubesphere   KubeSphere's images: its core (ks-apiserver, ks-controller-manager, ks-console, built from
#                shared/reference/kubesphere) and its monitoring (clusters with slipway_kubesphere_enabled or the operator)
#   operator     the slipway-operator image (slipway_operator_enabled, playbooks/operator.yml)
OPTIONAL_PARTS = ("kubesphere", "operator")
# What `--with` adds to a bundle: parts no cluster runs, off by default (make test and make lab do not build them).
#   conformance  the Kubernetes conformance suite of each release: e2e.test, ginkgo and the images its
#                [Conformance] specs run (conformance.py), under <release>/conformance/
OPT_IN_PARTS = ("conformance",)


def builder_sources():
    """Every file of the builder: a change to any of them rebuilds the bundle (the steps inside
    are keyed more narrowly, so the expensive ones are reused when they are not affected)."""
    paths = []
    for base in (HERE, os.path.join(TOOLS_BUNDLE, "pause"), os.path.join(TOOLS_BUNDLE, "images"),
                 kscore.PATCH_DIR):
        for name in sorted(os.listdir(base)):
            full = os.path.join(base, name)
            if os.path.isfile(full) and not name.endswith(".pyc"):
                paths.append(full)
    return paths


def make_backend(name, kubernetes_version, cache_dir, out=sys.stdout):
    if name == "source":
        from .source import SourceBackend
        return SourceBackend(kubernetes_version, cache_dir, out)
    if name == "download":
        from .download import DownloadBackend
        return DownloadBackend(kubernetes_version, cache_dir, out)
    raise ValueError("unknown backend %r (choose from %s)" % (name, ", ".join(BACKENDS)))


def _link_or_copy(src, dest, mode):
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)
    os.chmod(dest, mode)


def _place(new, result, prefix=""):
    """Link one release's files under ``new``/``prefix``; return its binaries and images entries."""
    return _place_files(new, result.binaries, result.images, prefix)


def _place_conformance(new, result, prefix=""):
    """The release's conformance suite, if it was built: its manifest section, else None."""
    if not result.conformance_binaries and not result.conformance_images:
        return None
    binaries, images = _place_files(new, result.conformance_binaries, result.conformance_images, prefix)
    return {"binaries": binaries, "images": images}


def _place_files(new, result_binaries, result_images, prefix):
    binaries, images = [], []
    for relpath, source, component in result_binaries:
        relpath = prefix + relpath
        dest = os.path.join(new, relpath)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        _link_or_copy(source, dest, 0o755)
        binaries.append(manifest.file_entry(new, relpath, component=component))
    for relpath, source, name, ref, component in result_images:
        relpath = prefix + relpath
        dest = os.path.join(new, relpath)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        _link_or_copy(source, dest, 0o644)
        images.append(manifest.file_entry(new, relpath, name=name, ref=ref, component=component))
    return (sorted(binaries, key=lambda entry: entry["path"]),
            sorted(images, key=lambda entry: entry["path"]))


def assemble(out_dir, result, arch=versions.ARCH, others=()):
    """Write the bundle: bin/, images/ and manifest.yml, replacing an older bundle in out_dir.

    ``others``: results of further Kubernetes releases, written under releases/vX.Y.Z/ and listed
    in the manifest's ``releases``.
    """
    os.makedirs(out_dir, exist_ok=True)
    has_manifest = os.path.exists(os.path.join(out_dir, manifest.MANIFEST_NAME))
    tops = manifest.CONTENT_DIRS + (manifest.RELEASES_DIR, manifest.CONFORMANCE)
    for top in tops:
        if os.path.exists(os.path.join(out_dir, top)) and not has_manifest:
            raise SystemExit("%s has a %s/ but no %s: not a bundle, refusing to replace it"
                             % (out_dir, top, manifest.MANIFEST_NAME))
    new = os.path.join(out_dir, ".new")
    if os.path.exists(new):
        shutil.rmtree(new)
    os.makedirs(new)
    binaries, images = _place(new, result)
    data = {
        "format_version": manifest.FORMAT_VERSION,
        "kubernetes_version": result.kubernetes_version,
        "arch": arch,
        "backend": result.backend,
        "components": result.components,
        "binaries": binaries,
        "images": images,
    }
    suite = _place_conformance(new, result)
    if suite is not None:
        data[manifest.CONFORMANCE] = suite
    releases = []
    for other in others:
        other_binaries, other_images = _place(
            new, other, "%s/%s/" % (manifest.RELEASES_DIR, other.kubernetes_version))
        entry = {"kubernetes_version": other.kubernetes_version, "components": other.components,
                 "binaries": other_binaries, "images": other_images}
        suite = _place_conformance(new, other, "%s/%s/" % (manifest.RELEASES_DIR, other.kubernetes_version))
        if suite is not None:
            entry[manifest.CONFORMANCE] = suite
        releases.append(entry)
    if releases:
        data["releases"] = releases
    for name in (manifest.MANIFEST_NAME, BUILD_STAMP):
        if os.path.exists(os.path.join(out_dir, name)):
            os.remove(os.path.join(out_dir, name))
    for top in tops:
        old = os.path.join(out_dir, top)
        if os.path.exists(old):
            shutil.rmtree(old)
        if os.path.exists(os.path.join(new, top)):
            os.replace(os.path.join(new, top), old)
    shutil.rmtree(new)
    manifest.write(out_dir, data)
    return data


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def _write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=1, sort_keys=True)


def _human(seconds):
    minutes, secs = divmod(int(round(seconds)), 60)
    return "%dm%02ds" % (minutes, secs) if minutes else "%.1fs" % seconds


def build(args, out=sys.stdout):
    started = time.monotonic()
    out_dir = os.path.abspath(args.out)
    cache_dir = os.path.abspath(args.cache_dir)
    os.makedirs(cache_dir, exist_ok=True)
    wanted = ([args.kubernetes_version] if isinstance(args.kubernetes_version, str)
              else list(args.kubernetes_version))
    # The first release goes to the top of the bundle, the others under releases/.
    backends = [make_backend(args.backend, version, cache_dir, out) for version in wanted]
    backend = backends[0]
    inputs = backend.inputs() if len(backends) == 1 else [each.inputs() for each in backends]
    without = sorted(set(getattr(args, "without", None) or ()))
    with_parts = sorted(set(getattr(args, "with_parts", None) or ()))
    # KubeSphere's core is built from archives outside the checkout: their sha256 is part of the key.
    kubesphere_sources = None
    if "kubesphere" not in without and backend.name == "source":
        kubesphere_sources = kscore.sources_dir()
        inputs = {"backends": inputs, "kubesphere_sources": {
            name: kscore.file_sha256(os.path.join(kubesphere_sources, name))
            for name in (versions.KUBESPHERE_CORE["kubesphere_archive"],
                         versions.KUBESPHERE_CORE["console_archive"])}}
    # The operator image holds the collection, its Python and the locked wheels: what of this
    # checkout it holds is part of the bundle's key.
    # runc links the static libseccomp of the installed libseccomp-dev (runtime.py).
    libseccomp = (runtime.installed_version(versions.DEBIAN_LIBSECCOMP_PACKAGE)
                  if backend.name == "source" else None)
    key = steps.digest({"backend": backend.name, "arch": versions.ARCH,
                        "inputs": inputs, "operator": pyimage.sources_digest(),
                        "libseccomp": libseccomp, "without": without, "with": with_parts,
                        "code": steps.files_digest(builder_sources())})
    times_path = os.path.join(cache_dir, "build-times.json")
    times = _read_json(times_path)
    stamp = _read_json(os.path.join(out_dir, BUILD_STAMP))
    if stamp.get("key") == key:
        try:
            problems = manifest.verify(out_dir, quick=True)
        except manifest.ManifestError as exc:
            problems = [str(exc)]
        if not problems:
            out.write("bundle %s is up to date (%s backend, Kubernetes %s); checked in %s\n"
                      % (out_dir, backend.name,
                         ", ".join(each.kubernetes_version for each in backends),
                         _human(time.monotonic() - started)))
            if key in times:
                out.write("the build that made it took %s (%s)\n"
                          % (_human(times[key]["seconds"]), times[key].get("summary", "")))
            if "full" in times:
                out.write("the last build that ran every step took %s\n"
                          % _human(times["full"]["seconds"]))
            return 0
    results = []
    ran_steps, reused_steps = [], []
    # The node's runtime does not depend on the release: its builds share the first release's two
    # slots, filling the one Kubernetes' long compile leaves free (docs/performance.md).
    runtime_parts = runtime.components(backend) if backend.name == "source" else None
    if runtime_parts:
        backend.alongside = runtime_parts
    for each in backends:
        results.append(each.build())
        if "conformance" in with_parts:
            # After the release's own build: its images are the suite's pause and etcd.
            conformance.build(each, results[-1])
        # Step names say their version (kubernetes v1.36.5, ...); shared steps (flannel, the
        # Debian root) are reused by the second release.
        ran_steps.extend(each.steps.ran)
        reused_steps.extend(each.steps.reused)
    # One operator image for every release of the bundle (the model takes a cluster's images from
    # its release only); the step runs once.
    ran_before, reused_before = len(backend.steps.ran), len(backend.steps.reused)
    operator = None
    if "operator" not in without:
        operator = pyimage.build(backend.steps, cache_dir, log_path=os.path.join(cache_dir, "build.log"))
    # KubeSphere's monitoring images do not depend on the Kubernetes release either: built once,
    # the same archives in every release.
    if "kubesphere" in without:
        watched, watched_components = [], {}
    elif backend.name == "source":
        watched, watched_components = monitoring.build(backend)
        # Its core, from the sources of shared/reference/kubesphere (the same archives in every release too).
        core, core_components = kscore.build(backend, sources=kubesphere_sources)
        watched = watched + core
        watched_components = dict(watched_components, **core_components)
    else:
        watched, watched_components = backend.kubesphere_monitoring()
    # Nor does the node's container runtime (containerd 2 and runc): the same files in every release.
    if backend.name == "source":
        runtime_files, runtime_components = runtime.build(backend, runtime_parts)
    else:
        runtime_files, runtime_components = backend.runtime()
    ran_steps.extend(backend.steps.ran[ran_before:])
    reused_steps.extend(backend.steps.reused[reused_before:])
    for result in results:
        if operator is not None:
            archive, ref, component = operator
            result.add_image("images/%s.tar" % pyimage.NAME, archive, pyimage.NAME, ref,
                             pyimage.COMPONENT)
            result.components[pyimage.COMPONENT] = component
        for image in watched:
            result.add_image(*image)
        result.components.update(watched_components)
        for binary in runtime_files:
            result.add_binary(*binary)
        result.components.update(runtime_components)
    backend.steps.say("writing %s" % out_dir)
    data = assemble(out_dir, results[0], others=results[1:])
    elapsed = time.monotonic() - started
    ran, reused = len(ran_steps), len(reused_steps)
    summary = ("all %d steps ran" % ran if not reused
               else "%d of %d steps ran, %d reused" % (ran, ran + reused, reused))
    times[key] = {"seconds": round(elapsed, 1), "summary": summary,
                  "steps": {name: round(secs, 1) for name, secs in ran_steps}}
    if not reused:
        times["full"] = times[key]
    _write_json(times_path, times)
    _write_json(os.path.join(out_dir, BUILD_STAMP), {"key": key})
    out.write("\nbundle %s (%s backend, Kubernetes %s, %s)\n"
              % (out_dir, backend.name, data["kubernetes_version"], data["arch"]))
    for release in manifest.releases(data):
        if release is not data:
            out.write("release %s:\n" % release["kubernetes_version"])
        for entry in release["images"]:
            out.write("  %-32s %s\n" % (entry["path"], entry["ref"]))
        out.write("  %d binaries\n" % len(release["binaries"]))
        suite = release.get(manifest.CONFORMANCE)
        if suite:
            for entry in suite["images"]:
                out.write("  %-46s %s\n" % (entry["path"], entry["ref"]))
            out.write("  %s\n" % " ".join(entry["path"] for entry in suite["binaries"]))
    for name, secs in ran_steps:
        out.write("  step %-28s %s\n" % (name, _human(secs)))
    if reused_steps:
        out.write("  reused %d cached steps: %s\n" % (len(reused_steps), ", ".join(reused_steps)))
    out.write("build time: %s (%s; a cold build is one with empty Go caches and no steps to "
              "reuse)\n" % (_human(elapsed), summary))
    return 0


def verify(args, out=sys.stdout):
    try:
        problems = manifest.verify(args.dir)
    except manifest.ManifestError as exc:
        out.write("%s\n" % exc)
        return 2
    if not problems:
        # The runtime's programs must also say the version the manifest gives them.
        data = manifest.load(args.dir)
        problems = runtime.version_problems(args.dir, [dict(release, arch=data.get("arch"))
                                                       for release in manifest.releases(data)])
    if problems:
        for problem in problems:
            out.write("%s\n" % problem)
        out.write("bundle %s: %d problem(s)\n" % (args.dir, len(problems)))
        return 1
    every = manifest.releases(data)
    suites = [release[manifest.CONFORMANCE] for release in every if release.get(manifest.CONFORMANCE)]
    out.write("bundle %s: %d binaries and %d images match manifest.yml (Kubernetes %s)%s\n"
              % (args.dir, sum(len(release["binaries"]) for release in every),
                 sum(len(release["images"]) for release in every),
                 ", ".join(release["kubernetes_version"] for release in every),
                 "; the conformance suite: %d binaries and %d images" % (
                     sum(len(suite["binaries"]) for suite in suites), sum(len(suite["images"]) for suite in suites))
                 if suites else ""))
    return 0


def parser():
    main = argparse.ArgumentParser(
        prog="build.py",
        description="Build the slipway.cluster artifact bundle (docs/bundle.md), or verify one "
                    "with `build.py verify DIR`.")
    main.add_argument("--backend", choices=BACKENDS, default="source",
                      help="source: build everything from Go modules and Debian packages "
                           "(default); download: official release files and upstream images")
    main.add_argument("--kubernetes-version", action="append", default=None,
                      help="a Kubernetes release to put into the bundle, or 'default' for the default "
                           "one; repeat it for more (the first at the top of the bundle, the others under "
                           "releases/). "
                           "Default: %s" % " ".join(versions.BUNDLE_KUBERNETES_VERSIONS))
    main.add_argument("--without", action="append", choices=OPTIONAL_PARTS, default=[],
                      help="leave out images that only some clusters run (repeatable): kubesphere "
                           "(KubeSphere's core and monitoring images), operator (the slipway-operator image). "
                           "make lab passes both unless its cluster runs them")
    main.add_argument("--with", dest="with_parts", action="append", choices=OPT_IN_PARTS, default=[],
                      help="add a part that no cluster runs (repeatable): conformance (the Kubernetes "
                           "conformance suite of each release: e2e.test, ginkgo and the images of its "
                           "[Conformance] specs, under conformance/; source backend only)")
    main.add_argument("--out", default=DEFAULT_OUT, help="bundle directory (default: %(default)s)")
    main.add_argument("--cache-dir", default=DEFAULT_CACHE,
                      help="build steps and downloads (default: %(default)s, or "
                           "$SLIPWAY_BUNDLE_CACHE)")
    return main


def verify_parser():
    check = argparse.ArgumentParser(prog="build.py verify",
                                    description="Recheck every file of a bundle against "
                                                "manifest.yml.")
    check.add_argument("dir", help="bundle directory")
    return check


def main(argv):
    if argv and argv[0] == "operator-lock":
        try:
            return pyimage.regenerate_lock()
        except pyimage.ImageError as exc:
            sys.stderr.write("build.py: %s\n" % exc)
            return 1
    if argv and argv[0] == "verify":
        return verify(verify_parser().parse_args(argv[1:]))
    args = parser().parse_args(argv)
    try:
        wanted = args.kubernetes_version or list(versions.BUNDLE_KUBERNETES_VERSIONS)
        # "default": the default release alone (make lab, whose cluster runs only that one).
        args.kubernetes_version = list(dict.fromkeys(
            versions.normalize_kubernetes_version(
                versions.DEFAULT_KUBERNETES_VERSION if version == "default" else version)
            for version in wanted))
        for version in args.kubernetes_version:
            versions.companions(version)
    except versions.VersionError as exc:
        sys.stderr.write("build.py: %s\n" % exc)
        return 2
    if "conformance" in args.with_parts and args.backend != "source":
        sys.stderr.write("build.py: --with conformance builds the suite and its images from source; "
                         "drop --backend %s or --with conformance\n" % args.backend)
        return 2
    try:
        return build(args)
    except BUILD_ERRORS as exc:
        sys.stderr.write("build.py: %s: %s\n" % (type(exc).__name__, exc))
        if args.backend == "source":
            sys.stderr.write("build.py: the output of the go, apt-get and dpkg-deb commands is in "
                             "%s\n" % os.path.join(os.path.abspath(args.cache_dir), "build.log"))
        return 1
