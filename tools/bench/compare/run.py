"""One comparison: for each installer in turn, a fresh 5-node lab cluster and the six steps on it.

The lab nodes come from lab/lab.py (its CLI, as bench.cluster uses it); the web workload and the
client loop of the upgrade, and the PLAY RECAP parser, are bench.cluster's. kubespray gets the
bundle from a files server and a registry on the lab network's gateway, started here and stopped
when the run ends, also when it fails.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

import bench.cluster  # recap, serve_web
from bench.compare import bundle as bundle_mod
from bench.compare import check, kubespray, prepare, report, services, steps
from lab import container_name

ROOT = Path(__file__).resolve().parents[3]

LAB = ROOT / "lab" / "lab.py"
# The images kubespray pulls for this cluster (and the client loop's busybox), by the bundle's short names.
IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd", "coredns", "pause",
          "flannel", "flannel-cni-plugin", "metrics-server", "busybox")
ADDED = "w3"
# The steps a step needs done (default: create); after a failed one it is not run, and says why.
NEEDS = {"create": (), "remove": ("create", "scale")}


@dataclasses.dataclass
class Options:
    bundle: Path
    nodes: list[str]
    lab_vars: list[str]
    tarball: Path
    work: Path
    installers: tuple[str, ...] = report.INSTALLERS
    steps: tuple[str, ...] = report.STEPS  # fewer to look into a step (with the steps it needs); the table needs all
    files_port: int = 8780
    registry_port: int = 5000


def extract(tar: tarfile.TarFile, into: Path) -> None:
    """tar's members into `into`, refusing any that would land outside it or is a device: extractall's filter="data"
    where the Python has it (3.11.4 on; Debian 12's 3.11.2 has not), the same refusals by hand where it has not."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, filter="data")
        return
    for member in tar.getmembers():
        name = os.path.normpath(member.name)
        link = os.path.normpath(os.path.join(os.path.dirname(name), member.linkname)) if member.issym() else ""
        target = os.path.normpath(member.linkname) if member.islnk() else ""
        if member.isdev() or any(p.startswith(("/", "..")) for p in (name, link, target) if p):
            raise tarfile.TarError(f"{member.name}: outside the directory it is unpacked into, or a device")
    tar.extractall(into)  # every member checked above


def unpack(tarball: Path, into: Path) -> tuple[Path, str]:
    """kubespray's `git archive` unpacked once (never into the checkout's tracked files); (its tree, its commit)."""
    with tarfile.open(tarball) as tar:
        commit = str(tar.pax_headers.get("comment", ""))[:9] or tarball.name
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        source = into / "kubespray"
        stamp = into / "kubespray.stamp"
        if not (stamp.is_file() and stamp.read_text(encoding="utf-8") == digest):
            shutil.rmtree(into, ignore_errors=True)
            into.mkdir(parents=True)
            extract(tar, into)
            top = next(p for p in into.iterdir() if p.is_dir())
            if top != source:
                top.rename(source)
            stamp.write_text(digest, encoding="utf-8")
    return source, commit


def git_commit(root: Path) -> str:
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return (out or "unknown") + ("+changes" if dirty else "")


def lab(*argv: str) -> None:
    proc = subprocess.run([sys.executable, str(LAB), *argv], text=True, capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"lab.py {' '.join(argv[:3])} failed: {proc.stdout[-1500:]}{proc.stderr[-1500:]}")


def lab_up(cluster: str, inventory: Path, nodes: list[str], added_groups: str, lab_vars: list[str]) -> None:
    """The cluster's nodes with the added worker started too; in its group only once it is added."""
    lab("up", "--cluster", cluster, "--inventory", str(inventory),
        *[f"--node={n}" for n in [*nodes, f"{ADDED}:{added_groups}"]], *[f"--vars={v}" for v in lab_vars])


@contextlib.contextmanager
def client_loop(inventory: Path, manifest: dict[str, Any], logs: Path,
                pull_policy: str = "Never") -> Iterator[list[dict[str, Any]]]:
    """bench.cluster's web Deployment and client during the block; the client's counts appended at the end."""
    counts: list[dict[str, Any]] = []
    client = bench.cluster.serve_web(str(inventory), manifest, logs, pull_policy)
    try:
        yield counts
    finally:
        counts.append(client.stop())


def leave_out(lab_inventory: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """lab.py's inventory without the hosts in `names` (the worker added later), its variables kept."""
    document = copy.deepcopy(lab_inventory)
    top = document["all"]
    top["hosts"] = {name: spec for name, spec in top["hosts"].items() if name not in names}
    for group in (top.get("children") or {}).values():
        if isinstance(group, dict) and isinstance(group.get("hosts"), dict):
            group["hosts"] = {name: spec for name, spec in group["hosts"].items() if name not in names}
    return document


# What a failed step leaves behind on the first control plane, read before its nodes are removed.
DIAGNOSTICS = (
    "curl -sk --max-time 5 'https://127.0.0.1:6443/healthz?verbose'",
    "crictl ps -a",
    "for c in $(crictl ps -a -q --name 'etcd|kube-apiserver' | head -4); do echo \"== $c\"; "
    "crictl logs --tail 40 $c 2>&1; done",
    "journalctl -u kubelet -n 40 --no-pager",
)


def diagnose(cluster: str, node: str, out: Path) -> Path:
    """The DIAGNOSTICS of a node of a lab cluster into `out` (podman exec, as root in the node)."""
    lines = []
    for command in DIAGNOSTICS:
        proc = subprocess.run(["podman", "exec", container_name(cluster, node), "sh", "-c",
                               f"PATH=$PATH:/usr/local/bin; {command}"],
                              capture_output=True, text=True, check=False, timeout=60)
        lines += [f"$ {command}  (exit {proc.returncode})", proc.stdout, proc.stderr]
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


def with_needs(steps_: tuple[str, ...]) -> set[str]:
    """The steps and every step they need, transitively."""
    chosen: set[str] = set()
    pending = list(steps_)
    while pending:
        step = pending.pop()
        if step not in chosen:
            chosen.add(step)
            pending += NEEDS.get(step, ("create",))
    return chosen


def measure(installer: str, run_steps: dict[str, list[steps.Command]], before: dict[str, Any], logs: Path,
            upgrade_client: Any, after_failure: Any = None,
            only: tuple[str, ...] = report.STEPS) -> list[report.StepResult]:
    """The steps in order; after a failed step the ones that need it are marked not run, with the reason.
    `after_failure(step)`, if given, keeps what the nodes say about a failed step. `only`: these steps and the
    ones they need; the others are marked not run, as not asked for."""
    results: list[report.StepResult] = []
    failed: set[str] = set()
    chosen = with_needs(only)
    for step in report.STEPS:
        if step not in chosen:
            results.append(report.StepResult(installer, step, error="not run: not asked for (--step)", ran=False))
            continue
        missing = [need for need in NEEDS.get(step, ("create",)) if need in failed]
        if missing:
            results.append(report.StepResult(installer, step, error=f"not run: the {missing[0]} step failed", ran=False))
            failed.add(step)
            continue
        if step in before:
            try:
                before[step]()
            except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
                results.append(report.StepResult(installer, step, error=f"preparing the step failed: {error}"))
                failed.add(step)
                continue
        log = logs / f"{installer}-{step}.log"
        print(f"== {installer}: {step} (log {log})", flush=True)
        if step == "upgrade":
            counts: list[dict[str, Any]] = []
            try:
                with upgrade_client() as counts:
                    result = steps.run_step(installer, step, run_steps[step], log, bench.cluster.recap)
            except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
                result = report.StepResult(installer, step, error=f"the client loop failed: {error}")
            if counts and result.ok:
                result.failed_requests, result.requests = counts[0]["failures"], counts[0]["requests"]
        else:
            result = steps.run_step(installer, step, run_steps[step], log, bench.cluster.recap)
        results.append(result)
        print(f"   {'failed' if result.error else f'{result.seconds:.0f} s, {result.changed} changed'}", flush=True)
        if result.error:
            failed.add(step)
            if after_failure:
                try:
                    print(f"   the nodes' side: {after_failure(step)}", flush=True)
                except (OSError, subprocess.SubprocessError) as error:
                    print(f"   the nodes' side could not be read: {error}", flush=True)
    return results


def compare(opts: Options) -> tuple[list[report.StepResult], str]:
    """Both installers, one after the other; the results and the Markdown section for docs/performance.md."""
    manifest = yaml.safe_load((opts.bundle / "manifest.yml").read_text(encoding="utf-8"))
    older, current = bundle_mod.upgrade_pair(manifest)
    for release in (older, current):
        bundle_mod.check_release(release)
    cache = prepare.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    logs = opts.work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    source, kubespray_commit = unpack(opts.tarball, opts.work / "src")
    python = Path(sys.executable)
    bench.cluster.BUNDLE = opts.bundle  # serve_web's kubectl
    results: list[report.StepResult] = []
    load: dict[str, tuple[float, float]] = {}
    for installer in opts.installers:
        cluster = f"cmp-{installer}"
        inventory = opts.work / installer / "hosts.yml"
        lab("down", "--cluster", cluster)
        start = os.getloadavg()[0]
        try:
            if installer == "slipway":
                results += _slipway(opts, cluster, inventory, python, older, current, manifest, logs)
            else:
                results += _kubespray(opts, cluster, inventory, source, cache, older, current, manifest, logs)
        except (RuntimeError, OSError, subprocess.CalledProcessError, bundle_mod.BundleError) as error:
            # Setting up (lab nodes, files server, registry, builds) failed: the other installer still runs.
            results += not_run_after(installer, report.StepResult(installer, "create",
                                                                  error=f"setting up the {installer} run failed: {error}"))
        finally:
            load[installer] = (start, os.getloadavg()[0])
            lab("down", "--cluster", cluster)
    section = report.document(results, when=datetime.datetime.now(datetime.timezone.utc), machine=report.Machine.here(),
                              slipway_commit=git_commit(ROOT), kubespray_commit=kubespray_commit, load=load,
                              versions=(older.kubernetes, current.kubernetes))
    return results, section


def _slipway(opts: Options, cluster: str, inventory: Path, python: Path, older: bundle_mod.Release,
             current: bundle_mod.Release, manifest: dict[str, Any], logs: Path) -> list[report.StepResult]:
    base_vars = ["slipway_artifacts_source=bundle", f"slipway_artifacts_bundle_dir={opts.bundle}",
                 "control_plane_coredns_upstreams=[]", *opts.lab_vars, f"slipway_kubernetes_version={older.kubernetes}"]
    lab_inventory = opts.work / "slipway" / "lab-hosts.yml"

    def inventory_for(added_in: bool) -> None:
        """The added worker runs from the start, but is in the inventory only from its scale to its removal:
        preflight refuses a host in no group of the cluster."""
        lab_up(cluster, lab_inventory, opts.nodes, "kube_node" if added_in else "", base_vars)
        document = yaml.safe_load(lab_inventory.read_text(encoding="utf-8"))
        kubespray.write_yaml(inventory, leave_out(document, set() if added_in else {ADDED}))

    inventory_for(False)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    playbook = str(python.parent / "ansible-playbook")
    run_steps = {step: steps.slipway_commands(step, playbook=playbook, inventory=inventory, root=ROOT, env=env,
                                              added=ADDED, version=current.kubernetes) for step in report.STEPS}
    before = {"scale": lambda: inventory_for(True), "upgrade": lambda: inventory_for(False)}
    return measure("slipway", run_steps, before, logs, lambda: client_loop(inventory, manifest, logs),
                   lambda step: diagnose(cluster, first_control_plane(opts.nodes), logs / f"slipway-{step}-nodes.log"),
                   opts.steps)


def first_control_plane(nodes: list[str]) -> str:
    return next((spec.partition(":")[0] for spec in nodes if "kube_control_plane" in spec.partition(":")[2]),
                nodes[0].partition(":")[0])


def _kubespray(opts: Options, cluster: str, inventory: Path, source: Path, cache: Path, older: bundle_mod.Release,
               current: bundle_mod.Release, manifest: dict[str, Any], logs: Path) -> list[report.StepResult]:
    plog = logs / "prepare.log"
    prepare.host_packages(plog)
    playbook = prepare.kubespray_venv(source, cache, plog)
    nerdctl = (prepare.NERDCTL_VERSION, prepare.nerdctl(cache, plog))
    address = services.gateway()
    files_root = opts.work / "files_repo"
    served = {r.kubernetes: bundle_mod.files_repo(opts.bundle, r, files_root, nerdctl) for r in (older, current)}
    lab_inventory = opts.work / "kubespray" / "lab-hosts.yml"
    with contextlib.ExitStack() as stack:
        files_url = stack.enter_context(services.file_server(files_root, address, opts.files_port, logs / "files.log"))
        registry = stack.enter_context(services.registry(opts.work / "registry", address, opts.registry_port,
                                                         logs / "registry.log"))
        fill_registry(opts.bundle, registry, [older, current], prepare.haproxy_image(cache, plog), logs / "skopeo.log")
        extra = {}
        for release in (older, current):
            found = kubespray.settings(release, served[release.kubernetes], files_url, registry)
            extra[release.kubernetes] = kubespray.write_yaml(opts.work / "kubespray" / f"extra-{release.kubernetes}.yml",
                                                             kubespray.extra_vars(found))
        write_settings_table(opts.work / "kubespray" / "settings.md",
                             kubespray.settings(older, served[older.kubernetes], files_url, registry))
        env = check.clean_env(playbook.parent)
        try:
            for path in extra.values():
                check.downloads(playbook, source, path, opts.work / "kubespray", env)
        except RuntimeError as error:
            return not_run_after("kubespray", report.StepResult("kubespray", "create", error=str(error)))

        def inventory_for(added_in: bool) -> None:
            lab_up(cluster, lab_inventory, opts.nodes, "kube_node" if added_in else "", [])
            document = yaml.safe_load(lab_inventory.read_text(encoding="utf-8"))
            kubespray.write_yaml(inventory, kubespray.inventory(document, set() if added_in else {ADDED}))

        inventory_for(False)
        env["ANSIBLE_CONFIG"] = str(source / "ansible.cfg")
        env["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = str(fresh_fact_cache(opts.work / "kubespray" / "facts"))
        # The sample inventory's password lookups (kubeadm_certificate_key) write under the inventory's credentials/:
        # a new cluster gets new ones, as a new inventory would.
        shutil.rmtree(inventory.parent / "credentials", ignore_errors=True)
        run_steps = {step: steps.kubespray_commands(
            step, playbook=str(playbook), inventory=inventory, source=source, env=env, added=ADDED,
            extra=extra[current.kubernetes if step in ("upgrade", "reset") else older.kubernetes])
            for step in report.STEPS}
        before = {"scale": lambda: inventory_for(True), "upgrade": lambda: inventory_for(False)}
        web = dict(manifest, images=[dict(i, ref=kubespray.mirror_ref(registry, i["ref"])) if i["name"] == "busybox"
                                     else i for i in manifest["images"]])
        # kubespray's nodes pull every image from the registry, busybox too (slipway's import the bundle's).
        return measure("kubespray", run_steps, before, logs, lambda: client_loop(inventory, web, logs, "IfNotPresent"),
                       lambda step: diagnose(cluster, first_control_plane(opts.nodes),
                                             logs / f"kubespray-{step}-nodes.log"), opts.steps)


def fresh_fact_cache(path: Path) -> Path:
    """kubespray's ansible.cfg caches facts as JSON files in /tmp for a day (gathering = smart): facts of the
    nodes of an earlier run, by the same names, would be taken for these. Its cache goes to an empty directory
    of this run instead, as on a controller that never ran it; within the run it caches as it always does."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def not_run_after(installer: str, failed: report.StepResult) -> list[report.StepResult]:
    """A failed first step and every other step not run, because of it."""
    return [failed] + [report.StepResult(installer, step, error=f"not run: the {failed.step} step failed", ran=False)
                       for step in report.STEPS if step != failed.step]


def fill_registry(bundle: Path, registry: str, releases: list[bundle_mod.Release], haproxy: Path, log: Path) -> int:
    """Every image kubespray pulls, from the bundle's archives (skopeo), and the haproxy image; the count pushed."""
    pushed: set[str] = set()
    for release in releases:
        for name in IMAGES:
            ref = kubespray.mirror_ref(registry, release.images[name])
            if ref not in pushed:
                services.push(bundle / release.image_paths[name], ref, log)
                pushed.add(ref)
    services.push(haproxy, kubespray.haproxy_ref(registry), log)
    return len(pushed) + 1


def write_settings_table(path: Path, found: list[kubespray.Setting]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(kubespray.settings_table(found) + "\n", encoding="utf-8")
