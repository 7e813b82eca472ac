"""Measure slipway-operator on a lab cluster: the time from `kubectl patch` of the ClusterConfiguration
to status `enabled` for one small component (alerting: one ThanosRuler), back to `disabled`, and a
reconcile with nothing to do (a spec edit of a component that is off). Prints a Markdown table for
docs/performance.md.

    python -m bench.operator [--cluster bench-operator] [--rounds 3] [--keep]
    python -m bench.operator --kubeconfig FILE [--rounds 3]     # a running cluster with the operator

Without --kubeconfig a fresh single-node lab cluster is made (lab/lab.py) and site.yml deploys the
components and the operator on it (slipway_kubesphere_enabled, slipway_operator_enabled, images from
the bundle, nothing pulled). Every figure is read from the cluster: the patch is timed from just before
kubectl runs until the status (or the leader's reconcile counter, read through the API server's pod
proxy) says it is done, polled every 0.2 s. Run with the controller virtualenv's python, as root;
`make bench-operator` does.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slipway_operator import collection

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "lab" / "lab.py"
# The ClusterConfiguration and its components as the collection's catalogue has them (make collection links it).
PLANNER = collection.planner(str(ROOT / ".cache" / "collections"))
NAMESPACE, NAME = PLANNER.DEFAULT_NAMESPACE, PLANNER.DEFAULT_NAME
POLL = 0.2
LIMIT = 900.0
SETTINGS = ("slipway_artifacts_source=bundle", "control_plane_coredns_upstreams=[]", "slipway_kubesphere_enabled=true",
            "slipway_operator_enabled=true", "kubesphere_image_pull_policy=Never", "kubesphere_wait=false")


def own_metrics(text: str) -> dict[str, float]:
    """slipway-operator's own series of a /metrics page, as {'name{labels}': value} (tests/integration reads it so too)."""
    values = {}
    for line in text.splitlines():
        match = re.match(r"^(slipway_operator_[a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if match:
            values[match.group(1)] = float(match.group(2))
    return values


class Cluster:
    """kubectl from the bundle against one cluster."""

    def __init__(self, kubeconfig: Path, bundle: Path):
        self.base = [str(bundle / "bin" / "kubectl"), "--kubeconfig", str(kubeconfig)]

    def kubectl(self, *args: str) -> str:
        proc = subprocess.run(self.base + list(args), capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def cc(self) -> dict:
        return json.loads(self.kubectl("-n", NAMESPACE, "get", "clusterconfiguration", NAME, "-o", "json"))

    def status_of(self, component: str) -> str | None:
        return (PLANNER.status_entry(self.cc().get("status"), PLANNER.COMPONENTS[component]) or {}).get("status")

    def patch(self, spec: dict) -> None:
        self.kubectl("-n", NAMESPACE, "patch", "clusterconfiguration", NAME, "--type=merge",
                     "--patch", json.dumps({"spec": spec}))

    def leader_metrics(self) -> dict[str, float]:
        lease = json.loads(self.kubectl("-n", NAMESPACE, "get", "lease", "slipway-operator", "-o", "json"))
        pod = lease["spec"]["holderIdentity"]
        return own_metrics(self.kubectl("get", "--raw",
                                        f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}:8080/proxy/metrics"))


def until(predicate, what: str) -> float:
    """Seconds until predicate() holds, polled every POLL s (from the caller's start mark)."""
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(POLL)
    raise SystemExit(f"timed out waiting for {what}")


def reconciles(cluster: Cluster) -> float:
    values = cluster.leader_metrics()
    return sum(value for key, value in values.items() if key.startswith("slipway_operator_reconciles_total"))


def measure(cluster: Cluster, rounds: int) -> dict[str, list[float]]:
    until(lambda: cluster.leader_metrics().get("slipway_operator_leader") == 1.0, "a leading replica")
    figures: dict[str, list[float]] = {"enable": [], "disable": [], "noop": []}
    for index in range(rounds):
        started = time.monotonic()
        cluster.patch({"alerting": {"enabled": True}})
        figures["enable"].append(until(lambda: cluster.status_of("alerting") == "enabled", "alerting enabled") - started)
        started = time.monotonic()
        cluster.patch({"alerting": {"enabled": False}})
        figures["disable"].append(until(lambda: cluster.status_of("alerting") == "disabled", "alerting disabled") - started)
        # alerting is off: an edit of its section changes its spec hash, and the plan has nothing to do.
        before, runs = reconciles(cluster), cluster.leader_metrics().get("slipway_operator_playbook_runs_total", 0)
        started = time.monotonic()
        cluster.patch({"alerting": {"thanosruler": {"replicas": 2 + index}}})
        figures["noop"].append(until(lambda: reconciles(cluster) > before, "the no-op reconcile") - started)
        if cluster.leader_metrics().get("slipway_operator_playbook_runs_total", 0) != runs:
            raise SystemExit("the reconcile with nothing to do ran the playbook")
    return figures


def table(figures: dict[str, list[float]]) -> str:
    names = {"enable": "`kubectl patch` alerting on -> status `enabled`",
             "disable": "`kubectl patch` alerting off -> status `disabled`",
             "noop": "`kubectl patch` with nothing to do -> reconcile counted"}
    lines = ["| measure | rounds | median | min | max |", "| --- | --- | --- | --- | --- |"]
    for key, name in names.items():
        values = figures[key]
        lines.append(f"| {name} | {len(values)} | {statistics.median(values):.1f} s | {min(values):.1f} s | {max(values):.1f} s |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.operator", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default="bench-operator")
    parser.add_argument("--kubeconfig", type=Path, help="measure this running cluster instead of making one")
    parser.add_argument("--bundle", type=Path, default=ROOT / "bundle")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="leave the lab cluster running")
    args = parser.parse_args()
    made = args.kubeconfig is None
    workdir = Path(tempfile.mkdtemp(prefix="bench-operator-"))
    inventory = workdir / "hosts.yml"
    try:
        if made:
            started = time.monotonic()
            subprocess.run([sys.executable, str(LAB), "up", "--cluster", args.cluster, "--node", "cp1:kube_control_plane,etcd,kube_node",
                            "--inventory", str(inventory), "--vars", f"slipway_artifacts_bundle_dir={args.bundle}",
                            *[arg for setting in SETTINGS for arg in ("--vars", setting)]], cwd=ROOT, check=True)
            log = workdir / "site.log"
            with log.open("w") as handle:
                proc = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(inventory), "site.yml"],
                                      cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"site.yml failed, log: {log}")
            print(f"site.yml with the components and the operator: {time.monotonic() - started:.0f} s")
            args.kubeconfig = workdir / "artifacts" / "admin.conf"
        figures = measure(Cluster(args.kubeconfig, args.bundle), args.rounds)
        print(table(figures))
    finally:
        if made and not args.keep:
            subprocess.run([sys.executable, str(LAB), "down", "--cluster", args.cluster], cwd=ROOT, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
