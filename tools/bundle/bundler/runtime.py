"""The node's container runtime, built from Go modules by the source backend: containerd 2, its runc
shim, ctr, and runc with seccomp.

None of them depends on the Kubernetes release, so cli.py builds them once (steps named with their
own versions) and puts the same files into every release of the bundle. Each program is built as
its project's Makefile builds its static release:

  containerd, ctr           CGO_ENABLED=0, tags urfave_cli_no_docs osusergo netgo static_build,
                            version stamp in github.com/containerd/containerd/v2/version
  containerd-shim-runc-v2   the same, plus tag no_grpc (the Makefile's SHIM_GO_BUILDTAGS)
  runc                      cgo (libcontainer's nsenter is C), tags seccomp urfave_cli_no_docs
                            netgo osusergo, linked statically against Debian's libseccomp.a
                            (package libseccomp-dev); its version is the module's VERSION file,
                            embedded by runc itself. Upstream's libpathrs tag is left out: it
                            needs the Rust libpathrs library, which Debian bookworm lacks; runc
                            then uses its pure Go implementation of the same checks.
"""

import os
import platform
import subprocess

from . import debs, gomod, source, versions

STRIP = source.STRIP
CONTAINERD_TAGS = ["urfave_cli_no_docs", "osusergo", "netgo", "static_build"]
RUNC_TAGS = ["seccomp", "urfave_cli_no_docs", "netgo", "osusergo"]
# The bundle's binaries of the runtime: (bundle path, manifest component, program).
BINARIES = (
    ("bin/containerd", "containerd", "containerd"),
    ("bin/containerd-shim-runc-v2", "containerd", "containerd-shim-runc-v2"),
    ("bin/ctr", "containerd", "ctr"),
    ("bin/runc", "runc", "runc"),
)


def installed_version(package, run=subprocess.run):
    """The installed version of a Debian package; a missing one stops the build with the fix."""
    proc = run(["dpkg-query", "-W", "-f=${Status} ${Version}", package], capture_output=True,
               text=True, check=False)
    fields = proc.stdout.split()
    if proc.returncode != 0 or fields[:3] != ["install", "ok", "installed"] or len(fields) < 4:
        raise debs.DebError("runc is linked with the static libseccomp of the Debian package %s, "
                            "which is not installed: apt-get install -y %s (tests/deps.sh does)"
                            % (package, package))
    return fields[3]


def _containerd_ldflags(version):
    module = versions.CONTAINERD["module"]
    return STRIP + gomod.x_flags(module + "/version", [("Version", version), ("Revision", ""),
                                                       ("Package", module)])


def containerd_components(version=None):
    """containerd and ctr in one build, the shim in another (its tags differ)."""
    module = versions.CONTAINERD["module"]
    version = version or versions.CONTAINERD["version"]
    text = ("Go module %s %s, CGO_ENABLED=0, tags %s (the shim also no_grpc)"
            % (module, version, " ".join(CONTAINERD_TAGS)))
    return (
        gomod.GoComponent("containerd", version, [(module, version)],
                          {"containerd": module + "/cmd/containerd", "ctr": module + "/cmd/ctr"},
                          ldflags=_containerd_ldflags(version), tags=CONTAINERD_TAGS, source=text),
        gomod.GoComponent("containerd-shim", version, [(module, version)],
                          {"containerd-shim-runc-v2": module + "/cmd/containerd-shim-runc-v2"},
                          ldflags=_containerd_ldflags(version),
                          tags=CONTAINERD_TAGS + ["no_grpc"], source=text),
    )


def runc_component(libseccomp, version=None):
    """runc with seccomp; ``libseccomp``: the installed libseccomp-dev version, part of the step's
    key (go build ignores SLIPWAY_LIBSECCOMP_DEV; the library it names is linked in)."""
    module = versions.RUNC["module"]
    version = version or versions.RUNC["version"]
    return gomod.GoComponent(
        "runc", version, [(module, version)], {"runc": module},
        ldflags=STRIP + ["-linkmode=external", "-extldflags=-static"], tags=RUNC_TAGS,
        env={"CGO_ENABLED": "1", "SLIPWAY_LIBSECCOMP_DEV": libseccomp},
        source="Go module %s %s, tags %s, linked statically with Debian's libseccomp "
               "(%s %s)" % (module, version, " ".join(RUNC_TAGS),
                            versions.DEBIAN_LIBSECCOMP_PACKAGE, libseccomp))


def components(backend):
    """The runtime's Go components, by name: containerd (with ctr), its shim, runc."""
    libseccomp = installed_version(versions.DEBIAN_LIBSECCOMP_PACKAGE, run=backend.run)
    return {component.name: component
            for component in containerd_components() + (runc_component(libseccomp),)}


def build(backend, parts=None):
    """Build containerd, its shim, ctr and runc with the source backend's steps: a list of
    (bundle path, file, component) and the manifest's components entries. ``parts``: components()
    when cli.py gave them to the backend to build beside Kubernetes (backend.alongside_built then
    holds their output); the others are built here, one after another."""
    parts = parts or components(backend)
    containerd, runc = parts["containerd"], parts["runc"]
    built = {}
    for component in parts.values():
        ready = backend.alongside_built.get(component.name)
        directory, _key = ready or backend._go_step(component)
        for name in component.programs:
            built[name] = os.path.join(directory, name)
    files = [(path, built[program], component) for path, component, program in BINARIES]
    return files, {
        "containerd": {"version": containerd.version, "source": containerd.source},
        "runc": {"version": runc.version, "source": runc.source},
    }


# How each runtime program tells its version, for `build.py verify`: {program: (arguments, component)}.
VERSION_ARGS = {
    "containerd": (["--version"], "containerd"),   # containerd github.com/containerd/containerd/v2 v2.3.7
    "ctr": (["--version"], "containerd"),          # ctr github.com/containerd/containerd/v2 v2.3.7
    "containerd-shim-runc-v2": (["-v"], "containerd"),  # containerd-shim-runc-v2: Version: v2.3.7 ...
    "runc": (["--version"], "runc"),               # runc version 1.5.2
}
HOST_ARCHES = {"x86_64": "amd64", "aarch64": "arm64"}


def reports_version(output, version):
    """Whether a program's version output names ``version`` (with or without its v) as a word."""
    words = output.replace(":", " ").split()
    return version in words or version.lstrip("v") in words


def version_problems(bundle_dir, releases, run=subprocess.run, machine=None):
    """Run each runtime binary of every release with its version flag and compare what it prints with
    the manifest's component version: one line per problem. ``releases``: manifest.releases(data).
    Skipped (empty) when the bundle's architecture is not this machine's."""
    machine = machine or platform.machine()
    problems = []
    for release in releases:
        components = release.get("components") or {}
        for entry in release.get("binaries") or []:
            name = os.path.basename(entry["path"])
            if name not in VERSION_ARGS or entry.get("component") != VERSION_ARGS[name][1]:
                continue
            if HOST_ARCHES.get(machine) != release.get("arch", versions.ARCH):
                continue
            args, component = VERSION_ARGS[name]
            want = (components.get(component) or {}).get("version", "")
            try:
                proc = run([os.path.join(bundle_dir, entry["path"])] + args, capture_output=True,
                           text=True, check=False, timeout=30)
                output, code = proc.stdout + proc.stderr, proc.returncode
            except OSError as exc:
                output, code = str(exc), -1
            if code != 0 or not reports_version(output, want):
                first = (output.strip().splitlines() or ["no output"])[0]
                problems.append("VERSION %s: manifest.yml says %s %s, `%s %s` prints %r (exit %d)"
                                % (entry["path"], component, want, name, " ".join(args), first,
                                   code))
    return problems
