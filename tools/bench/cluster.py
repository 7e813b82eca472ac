"""Measure site.yml on a fresh lab cluster: a first run that builds the cluster, then a rerun
that must change nothing. Prints wall times and task results per host (from PLAY RECAP) of both
runs as a Markdown table, for docs/performance.md.

    python -m bench.cluster --cluster bench --node cp1:kube_control_plane,etcd ... [--vars KEY=VALUE ...]
                            [--add w3:kube_node ...] [--upgrade] [--keep] [--log-dir DIR]

With --add, the added machines are started with the others but left out of the inventory's groups;
after the first run they are put in their groups and playbooks/scale.yml adds them (timed), then runs
again: the figures of growing the cluster, and the results on the hosts that were there before. Then
playbooks/remove_node.yml takes them away again, and runs a second time.

With --upgrade, the cluster is made at the bundle's older release (manifest.yml's releases), a web Deployment
behind a PodDisruptionBudget (molecule/resources/templates/web.yml.j2) is requested every 0.2 s through the
first worker's NodePort by molecule/lifecycle/files/client.py, and playbooks/upgrade.yml takes the cluster to
the bundle's current release (timed), then runs again; the client's count of failed requests is printed.

Run with the controller virtualenv's python, as root (the lab needs it); `make bench` does.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "bundle"
LAB = ROOT / "lab" / "lab.py"
RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+(?P<counts>(?:\w+=\d+\s*)+)$")


def recap(output: str) -> dict[str, dict[str, int]]:
    """{host: {ok: N, changed: N, skipped: N, failed: N, ...}} from the PLAY RECAP of a run."""
    hosts: dict[str, dict[str, int]] = {}
    in_recap = False
    for line in output.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        if in_recap:
            match = RECAP.match(line.strip())
            if not match:
                if hosts:
                    break
                continue
            hosts[match["host"]] = {k: int(v) for k, v in (pair.split("=") for pair in match["counts"].split())}
    return hosts


def run(argv: list[str], log: Path | None = None) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    took = time.monotonic() - started
    if log:
        log.write_text(proc.stdout)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-5000:])
        raise SystemExit(f"{' '.join(argv[:3])}... failed (exit {proc.returncode}){f', log: {log}' if log else ''}")
    return took, proc.stdout


def upgrade_versions(manifest: dict) -> tuple[str, str]:
    """(older, current) Kubernetes versions without the v, from the bundle's manifest.yml."""
    releases = manifest.get("releases") or []
    if not releases:
        raise SystemExit("the bundle holds one Kubernetes release: --upgrade needs an older one (docs/bundle.md)")
    return releases[0]["kubernetes_version"].lstrip("v"), manifest["kubernetes_version"].lstrip("v")


def web_manifest(namespace: str, busybox: str, pull_policy: str = "Never") -> str:
    """The web workload of the day-2 checks, rendered as molecule/lifecycle/side_effect.yml renders it. Never: the image is
    the bundle's, imported on every node; a cluster that pulls its images (kubespray's, in make compare) says
    IfNotPresent."""
    import jinja2  # ansible's dependency: in the controller virtualenv

    template = (ROOT / "molecule" / "resources" / "templates" / "web.yml.j2").read_text(encoding="utf-8")
    return jinja2.Template(template).render(web_namespace=namespace, busybox=busybox, web_pull_policy=pull_policy)


class Client:
    """molecule/lifecycle/files/client.py in the background: a request every 0.2 s, failures counted."""

    def __init__(self, url: str, out: Path):
        self.out = out
        self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [sys.executable, str(ROOT / "molecule" / "lifecycle" / "files" / "client.py"), f"--url={url}",
             f"--out={out}", "--interval=0.2", "--max-seconds=3600"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> dict:
        self.out.with_name(self.out.name + ".stop").touch()
        self.proc.wait(timeout=30)
        return json.loads(self.out.read_text(encoding="utf-8"))


def table(runs: list[tuple[str, float, dict[str, dict[str, int]]]]) -> str:
    hosts = sorted({host for run_ in runs for host in run_[2]})
    lines = ["| run | wall time | host | ok | changed | skipped | failed | task results |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, took, counts in runs:
        for index, host in enumerate(hosts):
            c = counts.get(host, {})
            total = c.get("ok", 0) + c.get("skipped", 0) + c.get("failed", 0)
            label = (name, f"{took:.0f} s") if index == 0 else ("", "")
            lines.append(f"| {label[0]} | {label[1]} | {host} | {c.get('ok', 0)} | {c.get('changed', 0)} | "
                         f"{c.get('skipped', 0)} | {c.get('failed', 0)} | {total} |")
    return "\n".join(lines)


def serve_web(inventory: str, manifest: dict, logs: Path, pull_policy: str = "Never") -> Client:
    """The web workload applied with the bundle's kubectl, available, answering; then the client started."""
    busybox = next(image["ref"] for image in manifest["images"] if image["name"] == "busybox")
    kubectl = [str(BUNDLE / "bin" / "kubectl"), "--kubeconfig", str(Path(inventory).parent / "artifacts" / "admin.conf")]
    subprocess.run(kubectl + ["apply", "-f", "-"], input=web_manifest("bench", busybox, pull_policy), text=True,
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(kubectl + ["--namespace", "bench", "rollout", "status", "deployment/web", "--timeout=300s"],
                   check=True, stdout=subprocess.DEVNULL)
    lab_inventory = yaml.safe_load(Path(inventory).read_text(encoding="utf-8"))["all"]
    worker = next(iter(lab_inventory["children"]["kube_node"]["hosts"]))
    url = f"http://{lab_inventory['hosts'][worker]['ip']}:30080/"
    # The Deployment is available before kube-proxy on the worker serves the new NodePort: the client, which
    # counts every failure, starts once the page answers.
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                answer.read()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    client = Client(url, logs / "client.json")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if client.out.exists() and json.loads(client.out.read_text(encoding="utf-8") or "{}").get("requests", 0) >= 10:
            break
        time.sleep(1)
    return client


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default="bench")
    parser.add_argument("--node", action="append", required=True)
    parser.add_argument("--vars", action="append", default=[])
    parser.add_argument("--inventory", default=str(ROOT / ".cache" / "bench" / "hosts.yml"))
    parser.add_argument("--log-dir", default=str(ROOT / ".cache" / "bench"))
    parser.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    parser.add_argument("--add", action="append", default=[], metavar="NAME:GROUPS",
                        help="a machine scale.yml adds after the first run (repeat)")
    parser.add_argument("--upgrade", action="store_true",
                        help="create at the bundle's older release, then time upgrade.yml to its current one")
    args = parser.parse_args()
    if args.upgrade and args.add:
        parser.error("--upgrade and --add are separate benchmarks")
    manifest = yaml.safe_load((BUNDLE / "manifest.yml").read_text(encoding="utf-8")) if args.upgrade else {}
    if args.upgrade:
        older, current = upgrade_versions(manifest)
        args.vars.append(f"slipway_kubernetes_version={older}")
    logs = Path(args.log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    lab = [python, str(LAB)]
    playbook = [str(Path(python).parent / "ansible-playbook"), "-i", args.inventory, "site.yml"]

    print(f"== fresh lab cluster '{args.cluster}' ({len(args.node)} nodes)", flush=True)
    run(lab + ["down", "--cluster", args.cluster])

    def up(added_groups: bool) -> float:
        added = args.add if added_groups else [spec.partition(":")[0] + ":" for spec in args.add]
        argv = (lab + ["up", "--cluster", args.cluster, "--inventory", args.inventory]
                + [f"--node={n}" for n in args.node + added] + [f"--vars={v}" for v in args.vars])
        return run(argv)[0]

    up_took = up(added_groups=False)
    results = []
    steps = [("first run", playbook), ("rerun", playbook)]
    if args.add:
        scale = playbook[:-1] + [str(ROOT / "playbooks" / "scale.yml")]
        added_names = ",".join(spec.partition(":")[0] for spec in args.add)
        remove = playbook[:-1] + [str(ROOT / "playbooks" / "remove_node.yml"), "-e", f"remove_node_names={added_names}"]
        steps = [("first run", playbook), ("scale", scale), ("scale rerun", scale),
                 ("remove_node", remove), ("remove_node rerun", remove)]
    client_counts = None
    if args.upgrade:
        upgrade = playbook[:-1] + [str(ROOT / "playbooks" / "upgrade.yml"), "-e", f"slipway_kubernetes_version={current}"]
        steps = [("first run", playbook), ("upgrade", upgrade), ("upgrade rerun", upgrade)]
    client = None
    try:
        for name, argv in steps:
            if name == "scale":
                up(added_groups=True)
            if name == "upgrade":
                client = serve_web(args.inventory, manifest, logs)
            print(f"== {name} (log: {logs / (name.replace(' ', '-') + '.log')})", flush=True)
            took, output = run(argv, logs / f"{name.replace(' ', '-')}.log")
            results.append((name, took, recap(output)))
            if name == "upgrade" and client is not None:
                client_counts = client.stop()
                client = None
    finally:
        if client:
            client.stop()
        if not args.keep:
            run(lab + ["down", "--cluster", args.cluster])
    changed = sum(c.get("changed", 0) for c in results[-1][2].values())
    print(f"\nnodes up in {up_took:.0f} s; the {results[-1][0]} changed {changed} task(s)\n")
    if args.add:
        added = {spec.partition(":")[0] for spec in args.add}
        before = {host: c for host, c in results[1][2].items() if host not in added}
        print(f"scale.yml: {results[1][1]:.0f} s; on the {len(before)} hosts that were there before: "
              f"{sum(c.get('changed', 0) for c in before.values())} changed\n")
    if client_counts is not None:
        print(f"upgrade.yml {older} -> {current}: {results[1][1]:.0f} s; the client made {client_counts['requests']} "
              f"requests every 0.2 s through the first worker's NodePort, {client_counts['failures']} failed "
              f"{client_counts['first_failures']}\n")
    print(table(results))
    return 0 if changed == 0 and not (client_counts or {}).get("failures") else 1


if __name__ == "__main__":
    os.environ.setdefault("ANSIBLE_CONFIG", str(ROOT / "ansible.cfg"))
    sys.exit(main())
