"""Measure the fleet on the lab (docs/performance.md, "The fleet"): a SlipwayCluster to Running against the same
site.yml run directly, and two SlipwayClusters at once against one after the other.

    python -m bench.fleet --inventory inventories/lab/hosts.yml --bundle bundle [--rounds 2] [--log-dir DIR]

The lab cluster of `make lab` with the fleet deployed in it and two spare lab nodes (`make bench-fleet` makes them:
make lab-fleet with LAB_FLEET_NODES="t1:fleet_hosts t2:fleet_hosts"). Every cluster is docs/fleet.md's prod.yml with
the lab's values (lab/lab_fleet.py), one node (control plane and worker) on a spare node, named bench-<node>. The
direct run gets the same inventory and variables the fleet's Job gets (slipway_fleet.spec), the bundle from this
machine instead of the Job's mount, and the lab's key. Steps, each alone on the machine:

  0. reset.yml directly on both spare nodes, so that every create starts from the same reset node;
  1. per round: a SlipwayCluster on one node, site.yml directly on the other (the next round swaps nodes and order);
     both reset (the SlipwayCluster deleted: its finalizer's reset.yml; the direct one with reset.yml);
  2. two SlipwayClusters, one on each node, applied at once; both deleted.

Two clusters one after the other are the SlipwayClusters of rounds 1 and 2: one on each node, each alone.

A SlipwayCluster is timed from just before `kubectl apply` until its status says Running at its generation (polled
every second); its Job's time is the SlipwayOperation's start and completion. Prints a Markdown table (and writes
results.md and results.json to the log directory) with the machine's load around each step and the commit.
Run with the controller virtualenv's python, as root.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

import lab_fleet
from slipway_fleet import spec as fleet_spec

ROOT = Path(__file__).resolve().parents[2]

NAMESPACE = lab_fleet.NAMESPACE
POLL = 1.0
LIMIT = 1800.0
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"


class BenchError(Exception):
    """A step that failed: the run stops there."""


# ---------------------------------------------------------------------------- what is applied and run


def cluster_doc(example: dict[str, Any], node: str, address: str, version: str, kubelet: Any) -> dict[str, Any]:
    """docs/fleet.md's prod.yml for the lab, named bench-<node>, on `address`; deleting it resets the host with its
    images (reset_containerd_images), so that the next create on it imports them again like the first."""
    doc = lab_fleet.lab_cluster(example, address, version, kubelet)
    spec = dict(doc["spec"], variables=dict(doc["spec"]["variables"], reset_containerd_images="true"))
    return {**doc, "metadata": {"name": f"bench-{node}", "namespace": NAMESPACE}, "spec": spec}


def direct_run(doc: dict[str, Any], op_type: str, bundle: Path, key: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inventory and extra variables of the fleet's Job for `op_type` (create or reset) on doc's spec, as
    ansible-playbook on this machine takes them: the bundle of this machine, the lab's key, the lab's ssh options."""
    spec, name = doc["spec"], doc["metadata"]["name"]
    hosts = [host["name"] for host in spec["hosts"]]
    variables = fleet_spec.operation_vars(op_type, hosts, spec, name)
    variables["slipway_artifacts_bundle_dir"] = str(bundle)
    variables["ansible_ssh_private_key_file"] = str(key)
    variables["ansible_ssh_common_args"] = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    if op_type == "reset":
        variables["reset_containerd_images"] = True
    return fleet_spec.inventory(spec), variables


def cluster_state(obj: dict[str, Any] | None) -> str:
    """running, failed or waiting, for a SlipwayCluster just applied (None: not there yet)."""
    if not obj:
        return "waiting"
    status = obj.get("status") or {}
    generation = int(obj["metadata"].get("generation") or 0)
    if status.get("phase") == "Failed":
        return "failed"
    if status.get("phase") == "Running" and int(status.get("appliedGeneration") or 0) == generation:
        return "running"
    return "waiting"


def parse_time(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def job_seconds(operation: dict[str, Any]) -> float | None:
    """The SlipwayOperation's Job, from its start to its completion (the Job controller's record, 1 s steps)."""
    status = operation.get("status") or {}
    started, ended = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    return ended - started if started is not None and ended is not None else None


@dataclasses.dataclass
class Figure:
    step: str
    what: str
    seconds: float
    job: float | None = None
    load: tuple[float, float] = (0.0, 0.0)  # the 1-minute load average before and after
    node: str = ""


def schedule(nodes: tuple[str, str], rounds: int) -> list[tuple[str, list[tuple[str, str]]]]:
    """The steps in order: (label, [(how, node), ...]) with how fleet, direct, reset-fleet or reset-direct; a step's
    runs go one after the other (`at once` ones at the same time)."""
    first, second = nodes
    steps: list[tuple[str, list[tuple[str, str]]]] = [("prepare", [("reset-direct", first), ("reset-direct", second)])]
    for index in range(rounds):
        fleet_node, direct_node = (first, second) if index % 2 == 0 else (second, first)
        order = [("fleet", fleet_node), ("direct", direct_node)]
        steps.append((f"round {index + 1}", order if index % 2 == 0 else order[::-1]))
        steps.append((f"round {index + 1} reset", [("reset-fleet", fleet_node), ("reset-direct", direct_node)]))
    steps.append(("at once", [("fleet-at-once", f"{first},{second}")]))
    steps.append(("at once reset", [("reset-fleet", first), ("reset-fleet", second)]))
    return steps


def table(figures: list[Figure]) -> str:
    lines = ["| step | what | node | wall | of which the Job | load before, after |", "| --- | --- | --- | ---: | ---: | --- |"]
    for figure in figures:
        job = f"{figure.job:.0f} s" if figure.job is not None else ""
        lines.append(f"| {figure.step} | {figure.what} | {figure.node} | {figure.seconds:.0f} s | {job} | "
                     f"{figure.load[0]:.1f}, {figure.load[1]:.1f} |")
    return "\n".join(lines)


def summary(figures: list[Figure]) -> list[str]:
    """The comparisons the issue asks for, from the table's rows."""
    lines = []
    fleet = [f.seconds for f in figures if f.what == "SlipwayCluster to Running" and f.step.startswith("round")]
    direct = [f.seconds for f in figures if f.what == "site.yml directly" and f.step.startswith("round")]
    if fleet and direct:
        mean_fleet, mean_direct = sum(fleet) / len(fleet), sum(direct) / len(direct)
        extra = mean_fleet - mean_direct
        said = (f"the fleet adds {extra:.0f} s ({100 * extra / mean_direct:.0f} %)" if extra >= 0 else
                f"the fleet took {-extra:.0f} s less ({-100 * extra / mean_direct:.0f} %)")
        lines.append(f"SlipwayCluster to Running {mean_fleet:.0f} s against site.yml directly {mean_direct:.0f} s "
                     f"(mean of {len(fleet)}): {said}")
    # One after the other: the first two rounds' SlipwayClusters, one on each node, each alone on the machine.
    after = [f.seconds for f in figures if f.what == "SlipwayCluster to Running" and f.step in ("round 1", "round 2")]
    once = [f.seconds for f in figures if f.step == "at once" and f.what == "both SlipwayClusters to Running"]
    if len(after) == 2 and once:
        lines.append(f"two clusters one after the other {sum(after):.0f} s (rounds 1 and 2), at once {once[0]:.0f} s "
                     f"({once[0] / sum(after):.2f} of the time)")
    return lines


# ---------------------------------------------------------------------------- against the lab


class Lab:
    """The management cluster (kubectl from the bundle) and the spare nodes."""

    def __init__(self, inventory_path: Path, bundle: Path, log_dir: Path):
        self.bundle, self.log_dir = bundle, log_dir
        inventory = yaml.safe_load(inventory_path.read_text(encoding="utf-8")) or {}
        self.spares = dict(lab_fleet.spare_hosts(inventory))
        if len(self.spares) < 2:
            raise BenchError(f"{inventory_path} has {len(self.spares)} spare node(s) in group {lab_fleet.SPARE_GROUP}, "
                             "not 2: make bench-fleet starts them (make lab-fleet LAB_FLEET_NODES=\"t1:fleet_hosts "
                             "t2:fleet_hosts\")")
        hosts = inventory["all"].get("hosts") or {}
        self.key = Path(str((hosts.get(next(iter(self.spares))) or {}).get("ansible_ssh_private_key_file") or ""))
        manifest = yaml.safe_load((bundle / "manifest.yml").read_text(encoding="utf-8")) or {}
        self.version = lab_fleet.bundle_version(manifest)
        self.kubelet = (inventory["all"].get("vars") or {}).get("control_plane_kubelet_configuration")
        self.example = lab_fleet.example(lab_fleet.DOCS.read_text(encoding="utf-8"))
        self.kubectl_base = [str(bundle / "bin" / "kubectl"), "--kubeconfig",
                             str(inventory_path.parent / "artifacts" / "admin.conf")]

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(self.kubectl_base + list(args), input=stdin, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BenchError(f"kubectl {' '.join(args[:3])} failed: {proc.stderr.strip()}")
        return proc.stdout

    def doc(self, node: str) -> dict[str, Any]:
        return cluster_doc(self.example, node, self.spares[node], self.version, self.kubelet)

    def check_free(self) -> None:
        """No SlipwayCluster of any namespace may use a spare node: step 0 resets them underneath."""
        items = json.loads(self.kubectl("get", "slipwayclusters", "--all-namespaces", "--output", "json"))["items"]
        for obj in items:
            used = {host["address"] for host in obj["spec"].get("hosts") or []} & set(self.spares.values())
            if used:
                raise BenchError(f"SlipwayCluster {obj['metadata']['namespace']}/{obj['metadata']['name']} uses "
                                 f"{', '.join(sorted(used))}: delete it first (kubectl delete resets its hosts)")

    def get(self, name: str) -> dict[str, Any] | None:
        proc = subprocess.run(self.kubectl_base + ["--namespace", NAMESPACE, "get", "slipwaycluster", name, "--output", "json"],
                              capture_output=True, text=True, check=False)
        return json.loads(proc.stdout) if proc.returncode == 0 else None

    def create_job_seconds(self, name: str) -> float | None:
        items = json.loads(self.kubectl("--namespace", NAMESPACE, "get", "slipwayoperations", "--selector",
                                        f"fleet.slipway.io/cluster={name}", "--output", "json"))["items"]
        creates = [op for op in items if op["spec"].get("type") == "create"]
        return job_seconds(creates[-1]) if creates else None

    def fleet(self, nodes: list[str]) -> tuple[float, dict[str, float]]:
        """Apply the nodes' SlipwayClusters together: the seconds until all are Running, and each one's."""
        docs = [self.doc(node) for node in nodes]
        names = [doc["metadata"]["name"] for doc in docs]
        started = time.monotonic()
        self.kubectl("apply", "--filename", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        done: dict[str, float] = {}
        while len(done) < len(names):
            if time.monotonic() - started > LIMIT:
                raise BenchError(f"{', '.join(sorted(set(names) - set(done)))} not Running after {LIMIT:.0f} s")
            for name in names:
                if name in done:
                    continue
                obj = self.get(name)
                state = cluster_state(obj)
                if state == "failed":
                    message = [c.get("message") for c in ((obj or {}).get("status") or {}).get("conditions") or []
                               if c.get("status") == "False"]
                    raise BenchError(f"{name} Failed: {'; '.join(m for m in message if m)}")
                if state == "running":
                    done[name] = time.monotonic() - started
            time.sleep(POLL)
        return time.monotonic() - started, done

    def delete(self, node: str) -> float:
        started = time.monotonic()
        self.kubectl("--namespace", NAMESPACE, "delete", "slipwaycluster", f"bench-{node}", "--ignore-not-found",
                     "--wait=true", "--timeout=30m")
        return time.monotonic() - started

    def playbook(self, node: str, playbook: str, op_type: str) -> float:
        inventory, variables = direct_run(self.doc(node), op_type, self.bundle, self.key)
        work = self.log_dir / f"direct-{node}"
        work.mkdir(parents=True, exist_ok=True)
        (work / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
        (work / "vars.json").write_text(json.dumps(variables), encoding="utf-8")
        log = self.log_dir / f"{playbook.removesuffix('.yml')}-{node}-{int(time.time())}.log"
        env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
        started = time.monotonic()
        with log.open("w", encoding="utf-8") as handle:
            proc = subprocess.run([str(PLAYBOOK), "-i", str(work / "hosts.yml"), "-e", f"@{work / 'vars.json'}",
                                   str(ROOT / "playbooks" / playbook)], cwd=ROOT, env=env, stdout=handle,
                                  stderr=subprocess.STDOUT, check=False)
        elapsed = time.monotonic() - started
        if proc.returncode != 0:
            raise BenchError(f"{playbook} on {node} failed (exit {proc.returncode}): see {log}")
        return elapsed


def measured(run: Callable[[], Any]) -> tuple[Any, tuple[float, float]]:
    before = os.getloadavg()[0]
    result = run()
    return result, (before, os.getloadavg()[0])


def execute(lab: Lab, steps: list[tuple[str, list[tuple[str, str]]]], say: Callable[[str], None]) -> list[Figure]:
    figures: list[Figure] = []
    for label, runs in steps:
        for how, node in runs:
            say(f"{label}: {how} {node}")
            if how == "fleet":
                (total, _each), load = measured(functools.partial(lab.fleet, [node]))
                figures.append(Figure(label, "SlipwayCluster to Running", total, lab.create_job_seconds(f"bench-{node}"),
                                      load, node))
            elif how == "fleet-at-once":
                pair = node.split(",")
                (total, each), load = measured(functools.partial(lab.fleet, pair))
                for one in pair:
                    figures.append(Figure(label, "SlipwayCluster to Running", each[f"bench-{one}"],
                                          lab.create_job_seconds(f"bench-{one}"), load, one))
                figures.append(Figure(label, "both SlipwayClusters to Running", total, None, load, node))
            elif how == "direct":
                seconds, load = measured(functools.partial(lab.playbook, node, "site.yml", "create"))
                figures.append(Figure(label, "site.yml directly", seconds, None, load, node))
            elif how == "reset-fleet":
                seconds, load = measured(functools.partial(lab.delete, node))
                figures.append(Figure(label, "SlipwayCluster deleted (reset.yml in its Job)", seconds, None, load, node))
            elif how == "reset-direct":
                seconds, load = measured(functools.partial(lab.playbook, node, "reset.yml", "reset"))
                figures.append(Figure(label, "reset.yml directly", seconds, None, load, node))
            say(f"  {figures[-1].what}: {figures[-1].seconds:.0f} s")
    return figures


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=False)
    return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory", type=Path, default=ROOT / "inventories" / "lab" / "hosts.yml")
    parser.add_argument("--bundle", type=Path, default=ROOT / "bundle")
    parser.add_argument("--rounds", type=int, default=2, choices=range(2, 10), metavar="2..9",
                        help="SlipwayCluster against site.yml rounds (default 2: rounds 1 and 2 are also the two "
                             "clusters one after the other)")
    parser.add_argument("--log-dir", type=Path, default=ROOT / ".cache" / "bench-fleet")
    args = parser.parse_args(argv)
    args.log_dir.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    try:
        lab = Lab(args.inventory, args.bundle.resolve(), args.log_dir)
        lab.check_free()
        nodes = tuple(sorted(lab.spares)[:2])
        figures = execute(lab, schedule((nodes[0], nodes[1]), args.rounds), lambda line: print(line, flush=True))
    except BenchError as error:
        print(f"bench.fleet: {error}", file=sys.stderr)
        return 1
    header = (f"{started:%Y-%m-%d %H:%M} UTC, commit {commit()}, {os.cpu_count()} CPUs, Kubernetes {lab.version}, "
              f"spare nodes {', '.join(f'{n} {lab.spares[n]}' for n in nodes)}")
    text = "\n".join([header, "", table(figures), "", *summary(figures)]) + "\n"
    (args.log_dir / "results.md").write_text(text, encoding="utf-8")
    (args.log_dir / "results.json").write_text(json.dumps([dataclasses.asdict(f) for f in figures], indent=1), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
