"""make compare: slipway and kubespray side by side (docs/performance.md, "Side by side with kubespray").

    python -m bench.compare run [--bundle DIR] [--node NAME:GROUPS ...] [--installer slipway|kubespray] [--step STEP ...]
    python -m bench.compare prepare     kubespray's virtualenv, nerdctl, the haproxy image (cached)
    python -m bench.compare check       kubespray's own defaults and inventory checks on the extra vars, localhost only
    python -m bench.compare settings    kubespray's settings beyond its defaults, each with its reason (Markdown)
    python -m bench.compare smoke       the files server and the registry on loopback, one image in and read back

Run as root with the controller virtualenv's python (`make compare` does).
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import urllib.request
from pathlib import Path

import yaml

from bench.compare import bundle, check, kubespray, prepare, report, run, services

ROOT = Path(__file__).resolve().parents[3]
# kubespray's git archive in shared/ beside the checkout, as the bundle builder looks for KubeSphere's sources.
TARBALL = ROOT.parent / "shared" / "reference" / "kubespray" / "kubespray-46dbdd399.tar.gz"
NODES = ["cp1:kube_control_plane,etcd", "cp2:kube_control_plane,etcd", "cp3:kube_control_plane,etcd",
         "w1:kube_node", "w2:kube_node"]


def cmd_run(args: argparse.Namespace) -> int:
    if not Path(args.kubespray).is_file():
        raise RuntimeError(f"kubespray's archive {args.kubespray} is missing: give its git archive "
                           "(make compare KUBESPRAY_ARCHIVE=PATH)")
    if not (Path(args.bundle) / "manifest.yml").is_file():
        raise RuntimeError(f"no bundle at {args.bundle} (no manifest.yml): build it with make bundle, or give "
                           "BUNDLE_DIR=DIR")
    names = [spec.partition(":")[0] for spec in args.node or NODES]
    if run.ADDED in names:
        raise RuntimeError(f"--node {run.ADDED}: that name is the worker the scale step adds; name the nodes otherwise")
    opts = run.Options(bundle=Path(args.bundle).resolve(), nodes=args.node or NODES, lab_vars=args.vars,
                       tarball=Path(args.kubespray), work=Path(args.work).resolve(),
                       installers=tuple(args.installer or report.INSTALLERS), steps=tuple(args.step or report.STEPS))
    results, section = run.compare(opts)
    out = opts.work / "compare.md"
    out.write_text(section, encoding="utf-8")
    # The whole section: the machine, both commits and the load averages, the table, the failures, every recap.
    print("\n" + section)
    print(f"The same, for docs/performance.md: {out}")
    return 0 if all(r.ok for r in results) else 1


def cmd_prepare(args: argparse.Namespace) -> int:
    cache = prepare.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    log = cache / "prepare.log"
    source, commit = run.unpack(Path(args.kubespray), Path(args.work).resolve() / "src")
    installed = prepare.host_packages(log)
    print(f"Debian packages: {', '.join(installed) or 'already installed'}")
    print(f"kubespray {commit}: {prepare.kubespray_venv(source, cache, log)}")
    print(f"nerdctl {prepare.NERDCTL_VERSION}: {prepare.nerdctl(cache, log)}")
    print(f"haproxy image: {prepare.haproxy_image(cache, log)}")
    return 0


def cmd_smoke(args: argparse.Namespace) -> int:
    """The two services on loopback: a file of the files_repo and one bundle image pushed and read back."""
    if args.archive:
        archive, source_ref = Path(args.archive).resolve(), args.ref
    else:
        bundle_dir = Path(args.bundle).resolve()
        manifest = yaml.safe_load((bundle_dir / "manifest.yml").read_text(encoding="utf-8"))
        release = next(iter(bundle.releases(manifest).values()))
        archive, source_ref = bundle_dir / release.image_paths[args.image], release.images[args.image]

    with tempfile.TemporaryDirectory() as work_dir, contextlib.ExitStack() as stack:
        work = Path(work_dir)
        (work / "files" / "dl.k8s.io").mkdir(parents=True)
        probe = work / "files" / "dl.k8s.io" / "probe"
        probe.write_bytes(b"slipway compare smoke\n")
        url = stack.enter_context(services.file_server(work / "files", "127.0.0.1", args.files_port, work / "files.log"))
        with urllib.request.urlopen(f"{url}/dl.k8s.io/probe", timeout=5) as answer:
            if answer.read() != probe.read_bytes():
                raise RuntimeError("the files server answered other bytes than the file's")
        print(f"files server {url}: served dl.k8s.io/probe")
        host = stack.enter_context(services.registry(work / "registry", "127.0.0.1", args.registry_port,
                                                     work / "registry.log"))
        ref = kubespray.mirror_ref(host, source_ref)
        services.push(archive, ref, work / "skopeo.log")
        digest = services.manifest_digest(ref)
        print(f"registry {host}: {source_ref} ({archive.name}) pushed as {ref}, read back (config {digest[:19]}…)")
        cache = prepare.cache_dir()
        cache.mkdir(parents=True, exist_ok=True)
        haproxy = prepare.haproxy_image(cache, cache / "prepare.log")
        ref = kubespray.haproxy_ref(host)
        services.push(haproxy, ref, work / "skopeo.log")
        print(f"registry {host}: the haproxy image pushed as {ref}, read back (config {services.manifest_digest(ref)[:19]}…)")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """kubespray's defaults and inventory checks on the extra vars of both releases, on localhost only."""
    bundle_dir = Path(args.bundle).resolve()
    manifest = yaml.safe_load((bundle_dir / "manifest.yml").read_text(encoding="utf-8"))
    work = Path(args.work).resolve()
    source = run.unpack(Path(args.kubespray), work / "src")[0]
    cache = prepare.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    log = cache / "prepare.log"
    playbook = prepare.kubespray_venv(source, cache, log)
    nerdctl = (prepare.NERDCTL_VERSION, prepare.nerdctl(cache, log))
    for release in bundle.upgrade_pair(manifest):
        served = bundle.files_repo(bundle_dir, release, work / "files_repo", nerdctl)
        found = kubespray.settings(release, served, f"http://GATEWAY:{args.files_port}", f"GATEWAY:{args.registry_port}")
        extra = kubespray.write_yaml(work / "kubespray" / f"check-extra-{release.kubernetes}.yml",
                                     kubespray.extra_vars(found))
        downloads = check.downloads(playbook, source, extra, work / "kubespray", check.clean_env(playbook.parent))
        print(f"kubespray {release.kubernetes}: its defaults and validate_inventory accept {extra.name}; "
              f"{len(downloads)} downloads enabled:")
        for name, item in downloads.items():
            print(f"  {name}: {item.get('url') or str(item.get('repo')) + ':' + str(item.get('tag'))}")
    return 0


def cmd_settings(args: argparse.Namespace) -> int:
    del args
    print(kubespray.settings_table(kubespray.symbolic()))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubespray", default=str(TARBALL), help="kubespray's git archive (tar.gz)")
    parser.add_argument("--work", default=str(ROOT / ".cache" / "compare"), help="inventories, logs, files_repo, registry")
    sub = parser.add_subparsers(dest="command", required=True)
    run_ = sub.add_parser("run", help="both installers, every step, one table")
    run_.add_argument("--bundle", default=str(ROOT / "bundle"))
    run_.add_argument("--node", action="append", default=[], metavar="NAME:GROUPS")
    run_.add_argument("--vars", action="append", default=[], metavar="KEY=VALUE", help="more lab vars for slipway")
    run_.add_argument("--installer", action="append", choices=report.INSTALLERS)
    run_.add_argument("--step", action="append", choices=report.STEPS,
                      help="only this step and the ones it needs (repeatable), to look into one; the table needs all")
    run_.set_defaults(func=cmd_run)
    prep = sub.add_parser("prepare", help="build what kubespray needs beyond the bundle (cached)")
    prep.set_defaults(func=cmd_prepare)
    check_ = sub.add_parser("check", help="kubespray's defaults and validate_inventory on the extra vars (localhost)")
    check_.add_argument("--bundle", default=str(ROOT / "bundle"))
    check_.add_argument("--files-port", type=int, default=8780)
    check_.add_argument("--registry-port", type=int, default=5000)
    check_.set_defaults(func=cmd_check)
    sub.add_parser("settings", help="kubespray's settings beyond its defaults, with their reasons (Markdown)"
                   ).set_defaults(func=cmd_settings)
    smoke = sub.add_parser("smoke", help="files server and registry on loopback")
    smoke.add_argument("--bundle", default=str(ROOT / "bundle"))
    smoke.add_argument("--image", default="pause", help="the bundle image pushed and read back")
    smoke.add_argument("--archive", help="a docker-archive to push instead of a bundle image (with --ref)")
    smoke.add_argument("--ref", default="registry.k8s.io/pause:3.10.2", help="the reference of --archive")
    smoke.add_argument("--files-port", type=int, default=18780)
    smoke.add_argument("--registry-port", type=int, default=15000)
    smoke.set_defaults(func=cmd_smoke)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (bundle.BundleError, RuntimeError) as error:
        print(f"compare {args.command}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
