#!/usr/bin/env python
"""Audit a cluster with kube-bench itself (benchmark cis-1.12), built from its Go module.

    tools/kube_bench.py build                       # .cache/kube-bench/kube-bench-v0.16.0.tar.gz
    tools/kube_bench.py run -i inventories/lab/hosts.yml [--json FILE]

`build` downloads github.com/aquasecurity/kube-bench at KUBE_BENCH_VERSION from the Go module proxy
(the module itself checked against the h1 hash pinned below, since the checksum database does not
answer for it), builds it the way the bundle builds its Go programs (a tools module requiring the
release, tools/bundle/bundler/gomod.py) with the version in its ldflags, and keeps it in one archive
with the module's cfg/config.yaml and cfg/cis-1.12 (kube-bench's benchmark definitions). A second
build with the same version does nothing.

`run` unpacks it on the first control plane, the first node that is not a control plane and the
first etcd member of an inventory (tools/kube_bench.yml), runs `kube-bench run --benchmark cis-1.12`
there with the targets each host has (master, etcd, node: what docs/security.md names), fetches the
JSON reports and prints every result that is not PASS, with the totals per host and target. It exits
1 when a scored test FAILs, so that a new FAIL is noticed; docs/security.md lists the ones known.
`make audit` runs both against the lab cluster (make lab).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from bundler import gomod

ROOT = Path(__file__).resolve().parent.parent

MODULE = "github.com/aquasecurity/kube-bench"
KUBE_BENCH_VERSION = "v0.16.0"
# `go mod download -json` of the version above: the module's h1 hash (the checksum database answers
# 404 for kube-bench, so GONOSUMDB names it and this pin stands in for the database).
KUBE_BENCH_SUM = "h1:HSKZktp3K+KNQj+PMvnCQM8iiMnufsTRY0L+DDl5Z1c="
BENCHMARK = "cis-1.12"
CACHE = ROOT / ".cache" / "kube-bench"
PLAYBOOK = ROOT / "tools" / "kube_bench.yml"


class AuditError(Exception):
    """A problem to report in one line."""


def component() -> gomod.GoComponent:
    """kube-bench as the bundle builds its Go programs: a tools module that requires the release."""
    return gomod.GoComponent(
        "kube-bench", KUBE_BENCH_VERSION, [(MODULE, KUBE_BENCH_VERSION)], {"kube-bench": MODULE},
        ldflags=["-s", "-w"] + gomod.x_flags(MODULE + "/cmd", [("KubeBenchVersion", KUBE_BENCH_VERSION)]))


def build(cache: Path = CACHE, go: gomod.Go | None = None) -> Path:
    """Build kube-bench once per version: the archive a host unpacks (the binary, cfg/config.yaml and
    cfg/BENCHMARK from the module)."""
    archive = cache / f"kube-bench-{KUBE_BENCH_VERSION}.tar.gz"
    if archive.is_file():
        return archive
    go = go or gomod.Go(environ=dict(os.environ, GONOSUMDB=MODULE))
    kube_bench = component()
    with tempfile.TemporaryDirectory() as scratch:
        info = go.download(MODULE, KUBE_BENCH_VERSION, scratch)
        if info.get("Sum") != KUBE_BENCH_SUM:
            raise AuditError(f"{MODULE}@{KUBE_BENCH_VERSION} has hash {info.get('Sum')}, not the pinned "
                             f"{KUBE_BENCH_SUM}: refusing to build it")
        workdir = Path(scratch) / "module"
        workdir.mkdir()
        (workdir / "go.mod").write_text(gomod.tools_gomod(kube_bench, {MODULE: Path(info["GoMod"]).read_text()}))
        built = Path(scratch) / "out"
        go.build(str(workdir), list(kube_bench.programs.values()), str(built), kube_bench.ldflags)
        cache.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(".partial")
        with tarfile.open(partial, "w:gz") as tar:
            tar.add(built / gomod.default_exec_name(MODULE), arcname="kube-bench")
            for name in ("cfg/config.yaml", f"cfg/{BENCHMARK}"):
                tar.add(Path(info["Dir"]) / name, arcname=name)
        partial.rename(archive)
    return archive


def results(report: dict) -> list[dict]:
    """The flat list of one kube-bench JSON report's results: id, target, status, scored, text."""
    rows = []
    for control in report.get("Controls") or []:
        for section in control.get("tests") or []:
            for result in section.get("results") or []:
                rows.append({"id": result.get("test_number", ""), "target": control.get("node_type", ""),
                             "status": result.get("status", ""), "scored": bool(result.get("scored")),
                             "text": result.get("test_desc", "")})
    return rows


def _id_key(text: str) -> list:
    return [int(part) if part.isdigit() else part for part in text.split(".")]


def summary(reports: dict[str, dict]) -> tuple[str, list[tuple[str, dict]]]:
    """A Markdown table of every result that is not PASS, with the totals per host and target, and
    the scored FAILs."""
    lines = ["| host | target | PASS | FAIL | WARN | INFO |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    others, failed = [], []
    for host in sorted(reports):
        rows = results(reports[host])
        for target in sorted({row["target"] for row in rows}):
            counts = {status: sum(1 for row in rows if row["target"] == target and row["status"] == status)
                      for status in ("PASS", "FAIL", "WARN", "INFO")}
            lines.append(f"| {host} | {target} | {counts['PASS']} | {counts['FAIL']} | {counts['WARN']} | "
                         f"{counts['INFO']} |")
        for row in sorted(rows, key=lambda row: _id_key(row["id"])):
            if row["status"] != "PASS":
                others.append(f"| {row['id']} | {row['target']} | {host} | {row['status']} | {row['text']} |")
            if row["status"] == "FAIL" and row["scored"]:
                failed.append((host, row))
    lines += ["", "| id | target | host | status | test |", "| --- | --- | --- | --- | --- |"] + others
    return "\n".join(lines), failed


def run(inventory: Path, archive: Path, out_json: Path | None) -> int:
    if not inventory.is_file():
        raise AuditError(f"no inventory at {inventory}: run `make lab` first, or give -i INVENTORY")
    with tempfile.TemporaryDirectory() as fetched:
        command = [str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOK),
                   "-e", json.dumps({"kube_bench_archive": str(archive), "kube_bench_benchmark": BENCHMARK,
                                     "kube_bench_fetch_dir": fetched})]
        proc = subprocess.run(command, check=False, cwd=ROOT)
        if proc.returncode != 0:
            raise AuditError(f"tools/kube_bench.yml failed (exit {proc.returncode}); its output is above")
        reports = {path.stem: json.loads(path.read_text()) for path in Path(fetched).glob("*.json")}
    if not reports:
        raise AuditError("kube-bench wrote no report")
    if out_json:
        out_json.write_text(json.dumps(reports, indent=1, sort_keys=True))
    table, failed = summary(reports)
    print(f"kube-bench {KUBE_BENCH_VERSION}, benchmark {BENCHMARK}\n")
    print(table)
    for host, row in failed:
        print(f"FAIL {row['id']} ({row['target']}, {host}): {row['text']}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build kube-bench from its Go module")
    audit = sub.add_parser("run", help="build, then audit the hosts of an inventory")
    audit.add_argument("-i", "--inventory", type=Path, default=ROOT / "inventories" / "lab" / "hosts.yml")
    audit.add_argument("--json", type=Path, help="write every host's kube-bench report here")
    args = parser.parse_args(argv)
    try:
        archive = build()
        if args.command == "build":
            print(archive)
            return 0
        return run(args.inventory.resolve(), archive, args.json)
    except (AuditError, gomod.GoError) as error:
        print(f"kube_bench: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
