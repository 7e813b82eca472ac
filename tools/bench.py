#!/usr/bin/env python
"""Measure site.yml on a fresh lab cluster: a first run that builds the cluster, then a rerun
that must change nothing. Prints wall times and task results per host (from PLAY RECAP) of both
runs as a Markdown table, for docs/performance.md.

    tools/bench.py --cluster bench --node cp1:kube_control_plane,etcd ... [--vars KEY=VALUE ...]
                   [--add w3:kube_node ...] [--keep] [--log-dir DIR]

With --add, the added machines are started with the others but left out of the inventory's groups;
after the first run they are put in their groups and playbooks/scale.yml adds them (timed), then runs
again: the figures of growing the cluster, and the results on the hosts that were there before. Then
playbooks/remove_node.yml takes them away again, and runs a second time.

Run with the controller virtualenv's python, as root (the lab needs it); `make bench` does.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default="bench")
    parser.add_argument("--node", action="append", required=True)
    parser.add_argument("--vars", action="append", default=[])
    parser.add_argument("--inventory", default=str(ROOT / ".cache" / "bench" / "hosts.yml"))
    parser.add_argument("--log-dir", default=str(ROOT / ".cache" / "bench"))
    parser.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    parser.add_argument("--add", action="append", default=[], metavar="NAME:GROUPS",
                        help="a machine scale.yml adds after the first run (repeat)")
    args = parser.parse_args()
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
    try:
        for name, argv in steps:
            if name == "scale":
                up(added_groups=True)
            print(f"== {name} (log: {logs / (name.replace(' ', '-') + '.log')})", flush=True)
            took, output = run(argv, logs / f"{name.replace(' ', '-')}.log")
            results.append((name, took, recap(output)))
    finally:
        if not args.keep:
            run(lab + ["down", "--cluster", args.cluster])
    changed = sum(c.get("changed", 0) for c in results[-1][2].values())
    print(f"\nnodes up in {up_took:.0f} s; the {results[-1][0]} changed {changed} task(s)\n")
    if args.add:
        added = {spec.partition(":")[0] for spec in args.add}
        before = {host: c for host, c in results[1][2].items() if host not in added}
        print(f"scale.yml: {results[1][1]:.0f} s; on the {len(before)} hosts that were there before: "
              f"{sum(c.get('changed', 0) for c in before.values())} changed\n")
    print(table(results))
    return 0 if changed == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("ANSIBLE_CONFIG", str(ROOT / "ansible.cfg"))
    sys.exit(main())
