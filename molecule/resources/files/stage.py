#!/usr/bin/env python
"""Run one step of a Molecule scenario: set the inventory's groups, run a playbook, judge its recap.

    stage.py --inventory-dir DIR --node cp1:kube_control_plane,etcd --node w1:kube_node \
             --playbook playbooks/scale.yml [--extra KEY=VALUE ...] [--limit HOSTS] [--check] --log LOG \
             [--expect changed|unchanged|failed] [--expect-output REGEX ...]
    stage.py ... --documented "ansible-playbook playbooks/etcd_restore.yml -i INVENTORY -e etcd_snapshot=FILE" \
             [--fill etcd_snapshot=PATH ...] --log LOG ...

With --documented, the command is run exactly as README.md or docs/ show it (tools/doc_commands.py; the text must be
one of theirs), from the repository's root, with relative paths as a user types them: the inventory through a link
in .cache/scenario-inventories/, each placeholder filled by --fill (an absolute path under the inventory or the
checkout written relative to the root).

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

import doc_commands  # the commands README.md and docs/ show (tools/, importable in .venv: pyproject.toml)
from bench.cluster import recap  # the same PLAY RECAP parser as make bench

ROOT = Path(__file__).resolve().parents[3]


def stage_inventory(nodes: list[str]) -> str:
    groups: dict[str, list[str]] = {}
    for spec in nodes:
        name, _sep, names = spec.partition(":")
        for group in filter(None, names.split(",")):
            groups.setdefault(group, []).append(name)
    lines = ["# Written by molecule/resources/files/stage.py: the groups of this step of the scenario.", "---", "all:", "  children:"]
    for group, members in groups.items():
        lines.append(f"    {group}:")
        lines.append("      hosts:")
        lines.extend(f"        {member}: {{}}" for member in members)
    return "\n".join(lines) + "\n"


def relative_inventory(inventory_dir: Path) -> Path:
    """The scenario's inventory as a path relative to the root: a link .cache/scenario-inventories/<scenario>."""
    link = ROOT / ".cache" / "scenario-inventories" / inventory_dir.resolve().parent.name
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink() or Path(os.readlink(link)) != inventory_dir.resolve():
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(inventory_dir.resolve())
    return link.relative_to(ROOT)


def relative_value(value: str, inventory_dir: Path, inventory: Path) -> str:
    """An absolute path under the scenario's inventory or the checkout, written relative to the root."""
    if not os.path.isabs(value):
        return value
    path = Path(value)
    for base, shown in ((inventory_dir.resolve(), inventory), (ROOT, Path("."))):
        try:
            return str(shown / path.resolve().relative_to(base))
        except ValueError:
            continue
    return value


def documented_argv(text: str, fills: list[str], inventory_dir: Path) -> list[str]:
    shown = {command.text for command in doc_commands.documented_commands(ROOT)}
    if text not in shown:
        raise SystemExit(f"stage.py: not a command README.md or docs/ show (tools/doc_commands.py list): {text}")
    inventory = relative_inventory(inventory_dir)
    values = {}
    for pair in fills:
        key, _sep, value = pair.partition("=")
        values[key] = relative_value(value, inventory_dir, inventory)
    program = "ansible-playbook" if text.startswith("ansible-playbook") else ""
    argv = doc_commands.fill(text, str(inventory), values, program=program or text.split()[0])
    if program:
        # `ansible-playbook` as found on PATH: the controller's (the virtualenv's) one.
        argv[0] = str(Path(sys.executable).with_name("ansible-playbook"))
    return argv


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--inventory-dir", required=True, type=Path)
    parser.add_argument("--node", action="append", default=[])
    parser.add_argument("--playbook", default="")
    parser.add_argument("--documented", default="", help="a command as README.md or docs/ show it")
    parser.add_argument("--fill", action="append", default=[], help="KEY=VALUE for a placeholder of --documented")
    parser.add_argument("--extra", action="append", default=[])
    parser.add_argument("--limit", default="")
    parser.add_argument("--check", action="store_true", help="run the playbook in check mode")
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--expect", choices=("changed", "unchanged", "failed"), default="changed")
    parser.add_argument("--expect-output", action="append", default=[])
    args = parser.parse_args()

    (args.inventory_dir / "lifecycle-stage.yml").write_text(stage_inventory(args.node), encoding="utf-8")
    if args.documented:
        if args.extra or args.limit or args.check:
            parser.error("--documented runs the command as the docs write it: no --extra, --limit or --check")
        argv = documented_argv(args.documented, args.fill, args.inventory_dir)
        args.playbook = doc_commands.playbook_of(argv)
    elif not args.playbook:
        parser.error("give --playbook or --documented")
    else:
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
    result = {"playbook": args.playbook, "argv": argv[1:], "rc": proc.returncode, "seconds": took, "recap": counts, "log": str(args.log)}
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
