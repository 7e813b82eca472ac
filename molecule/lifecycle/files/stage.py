#!/usr/bin/env python
"""Run one step of the lifecycle scenario: set the inventory's groups, run a playbook, judge its recap.

    stage.py --inventory-dir DIR --node cp1:kube_control_plane,etcd --node w1:kube_node \
             --playbook playbooks/scale.yml [--extra KEY=VALUE ...] [--limit HOSTS] [--check] --log LOG \
             [--expect changed|unchanged|failed] [--expect-output REGEX ...]

The groups go to DIR/lifecycle-stage.yml, read with the lab inventory beside it (so every later
Molecule step sees the same cluster). Prints one JSON line: the exit code, the wall time and the
recap per host. Exits non-zero when the run does not meet the expectation: `unchanged` means a
successful run with changed=0 on every host (a second run), `failed` a run that fails (a refusal).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))
from bench import recap  # noqa: E402  (the same PLAY RECAP parser as make bench)


def stage_inventory(nodes: list[str]) -> str:
    groups: dict[str, list[str]] = {}
    for spec in nodes:
        name, _sep, names = spec.partition(":")
        for group in filter(None, names.split(",")):
            groups.setdefault(group, []).append(name)
    lines = ["# Written by molecule/lifecycle/files/stage.py: the groups of this step of the scenario.", "---", "all:", "  children:"]
    for group, members in groups.items():
        lines.append(f"    {group}:")
        lines.append("      hosts:")
        lines.extend(f"        {member}: {{}}" for member in members)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--inventory-dir", required=True, type=Path)
    parser.add_argument("--node", action="append", default=[])
    parser.add_argument("--playbook", required=True)
    parser.add_argument("--extra", action="append", default=[])
    parser.add_argument("--limit", default="")
    parser.add_argument("--check", action="store_true", help="run the playbook in check mode")
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--expect", choices=("changed", "unchanged", "failed"), default="changed")
    parser.add_argument("--expect-output", action="append", default=[])
    args = parser.parse_args()

    (args.inventory_dir / "lifecycle-stage.yml").write_text(stage_inventory(args.node), encoding="utf-8")
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(args.inventory_dir),
            str(ROOT / args.playbook)]
    for extra in args.extra:
        argv += ["-e", extra]
    if args.limit:
        argv += ["--limit", args.limit]
    if args.check:
        argv.append("--check")
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"}, check=False)
    took = round(time.monotonic() - started, 1)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    args.log.write_text(proc.stdout, encoding="utf-8")
    counts = recap(proc.stdout)
    result = {"playbook": args.playbook, "rc": proc.returncode, "seconds": took, "recap": counts, "log": str(args.log)}
    problems = []
    if args.expect == "failed":
        if proc.returncode == 0:
            problems.append("the run succeeded but was expected to be refused")
    elif proc.returncode != 0:
        problems.append(f"the run failed (exit {proc.returncode})")
    if args.expect == "unchanged":
        changed = {host: c.get("changed", 0) for host, c in counts.items() if c.get("changed", 0)}
        if changed or not counts:
            problems.append(f"a second run changed something: {changed or 'no recap'}")
    for pattern in args.expect_output:
        if not re.search(pattern, proc.stdout):
            problems.append(f"the output does not match {pattern!r}")
    result["problems"] = problems
    print(json.dumps(result, sort_keys=True))
    if problems:
        tail = "\n".join(proc.stdout.splitlines()[-80:])
        print(f"--- the end of {args.log}:\n{tail}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
