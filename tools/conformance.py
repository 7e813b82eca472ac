#!/usr/bin/env python
"""Run the Kubernetes conformance suite of a bundle (build.py --with conformance) against a cluster.

    tools/conformance.py run --bundle bundle --kubeconfig FILE [-i INVENTORY] [--out DIR] [--nodes N] [--slice NAME]
    tools/conformance.py slices

The way sonobuoy and hydrophone run it: the `[Conformance]` specs that are not `[Serial]` with ginkgo
in parallel (`--nodes`, default 4), then the `[Serial]` ones alone. Before that, with `-i`, the
suite's images are imported into containerd on every node of the inventory (tools/conformance.yml:
only those a node lacks; nothing is pulled), so that every reference the suite names is there.
The output directory (default .cache/conformance/<release>) gets what the CNCF conformance
submission asks for: `e2e.log` (both runs' output, shown as it runs) and `junit_01.xml` (both runs'
reports in one: each spec once, with the result of the run that ran it), and the summary (passed,
failed, skipped, time) is printed at the end and written to `summary.txt`. It exits 1 when a spec
failed.

With --slice, only the [Conformance] specs of one named slice run (SLICES below; `slices` lists them), the same
two ways: the suite's own specs, chosen by subject, never a spec left out of its subject to make a number.
The release is the bundle's own (its top) unless --release names one of its others. The suite's files
are checked against manifest.yml's sha256s before anything runs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from bundler import manifest

ROOT = Path(__file__).resolve().parent.parent

PLAYBOOK = ROOT / "tools" / "conformance.yml"
DEFAULT_NODES = 4
FOCUS = r"\[Conformance\]"
SERIAL = r"\[Serial\]"
# The [Serial] [Conformance] specs: the suite puts its labels after the spec's text in either order.
SERIAL_FOCUS = SERIAL + ".*" + FOCUS + "|" + FOCUS + ".*" + SERIAL
# A spec's name in the report; the others are the suite's setup (BeforeSuite, ReportAfterSuite, ...).
SPEC_PREFIX = "[It] "
# The suite's default timeout is 1h, less than a full run takes.
TIMEOUT = "24h"
PHASES = ("parallel", "serial")
# Named slices of the [Conformance] specs, by subject: a ginkgo focus on the specs' names (the suite's labels,
# Conformance and Serial, choose within it). "slipway": what slipway configures on every cluster: CoreDNS (DNS),
# kube-proxy and the Service network (Services, HostPort, the API server's Service and endpoints), the CNI's pod
# network (Networking), the API server's proxy to pods and Services (Proxy, kubectl proxy), and the kubelet with
# containerd: exec, logs and attach over the API server, lifecycle hooks, /etc/hosts, sysctls (the kubelet's
# hardening flags), a read-only root file system.
SLICES = {
    "slipway": (
        "DNS, Services, the pod network and the API server's proxy; the kubelet's exec, logs, hooks and sysctls",
        r"\[sig-network\] (DNS|Services|Networking|Proxy|HostPort|API Server) "
        r"|\[sig-node\] (Kubelet|KubeletManagedEtcHosts|Container Lifecycle Hook|Sysctls) "
        r"|\[sig-node\] Pods should support (remote command execution|retrieving logs) "
        r"|\[sig-cli\] Kubectl (logs|client Proxy server) "),
}


class ConformanceError(Exception):
    """A problem to report in one line."""


def suite(data: dict, bundle_dir: str, release: str | None = None) -> dict:
    """The conformance part of one release of a loaded manifest: e2e.test, ginkgo and the images."""
    every = manifest.releases(data)
    chosen = every[0] if release is None else next(
        (each for each in every if each.get("kubernetes_version") == release), None)
    if chosen is None:
        raise ConformanceError("the bundle at %s holds Kubernetes %s, not %s; pass --release with one of them"
                               % (bundle_dir, ", ".join(each["kubernetes_version"] for each in every), release))
    section = chosen.get(manifest.CONFORMANCE)
    version = chosen["kubernetes_version"]
    if not section:
        raise ConformanceError("the bundle at %s has no conformance suite for Kubernetes %s; build it with "
                               "`python3 tools/bundle/build.py --with conformance --out %s`"
                               % (bundle_dir, version, bundle_dir))
    binaries = {os.path.basename(entry["path"]): os.path.join(bundle_dir, entry["path"])
                for entry in section["binaries"]}
    missing = sorted({"e2e.test", "ginkgo"} - set(binaries))
    if missing:
        raise ConformanceError("the conformance suite of %s in %s has no %s" % (version, bundle_dir, ", ".join(missing)))
    return {"kubernetes_version": version, "e2e": binaries["e2e.test"], "ginkgo": binaries["ginkgo"],
            "images": [{"name": entry["name"], "src": os.path.join(bundle_dir, entry["path"]), "ref": entry["ref"],
                        "sha256": entry["sha256"]} for entry in section["images"]]}


def check_files(data: dict, bundle_dir: str, checksum=manifest.sha256_file) -> list[str]:
    """Every conformance file of the bundle against its sha256: a line per problem."""
    problems = []
    for release in manifest.releases(data):
        section = release.get(manifest.CONFORMANCE) or {}
        for entry in list(section.get("binaries") or []) + list(section.get("images") or []):
            full = os.path.join(bundle_dir, entry["path"])
            if not os.path.isfile(full):
                problems.append("%s: listed in manifest.yml but missing; copy the whole bundle again" % entry["path"])
            elif checksum(full) != entry["sha256"]:
                problems.append("%s: its sha256 is not manifest.yml's; copy or build the bundle again" % entry["path"])
    return problems


def e2e_flags(kubeconfig: str, report_dir: str) -> list[str]:
    """What e2e.test itself is given in both runs."""
    return ["--kubeconfig=" + kubeconfig, "--provider=skeleton", "--report-dir=" + report_dir,
            "--disable-log-dump"]


def commands(files: dict, kubeconfig: str, out: str, nodes: int = DEFAULT_NODES,
             slice_name: str | None = None) -> dict[str, list[str]]:
    """The two runs: the [Conformance] specs but [Serial] with ginkgo on ``nodes`` processes, then the
    [Serial] [Conformance] specs alone. Each writes its junit_01.xml into its own directory. With a slice, the
    same two runs of the slice's specs: its focus, and the suite's labels for [Conformance] and [Serial] (a ginkgo
    focus given twice matches either, so the labels do the "and")."""
    if nodes < 1:
        raise ConformanceError("--nodes is %d; give 1 or more ginkgo processes" % nodes)
    if slice_name is None:
        choose_parallel = ["--focus=" + FOCUS, "--skip=" + SERIAL]
        choose_serial = ["--ginkgo.focus=" + SERIAL_FOCUS]
    elif slice_name in SLICES:
        focus = SLICES[slice_name][1]
        choose_parallel = ["--focus=" + focus, "--label-filter=Conformance && !Serial"]
        choose_serial = ["--ginkgo.focus=" + focus, "--ginkgo.label-filter=Conformance && Serial"]
    else:
        raise ConformanceError("--slice %s: no such slice; the slices are %s" % (slice_name, ", ".join(sorted(SLICES))))
    parallel = ([files["ginkgo"], "--nodes=%d" % nodes, "--timeout=" + TIMEOUT, "--no-color"] + choose_parallel
                + [files["e2e"], "--"] + e2e_flags(kubeconfig, os.path.join(out, "parallel")))
    serial = ([files["e2e"], "--ginkgo.timeout=" + TIMEOUT, "--ginkgo.no-color"] + choose_serial
              + e2e_flags(kubeconfig, os.path.join(out, "serial")))
    return {"parallel": parallel, "serial": serial}


def _result(case: ET.Element) -> str:
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    if case.find("skipped") is not None:
        return "skipped"
    return "passed"


def merge_junit(texts: list[str]) -> ET.Element:
    """One <testsuites> with one <testsuite>: every spec once, with the result of the run that ran it
    (a spec skipped in one run and run in the other counts as run; one that failed in either, failed)."""
    rank = {"skipped": 0, "passed": 1, "failed": 2}
    cases: dict[str, ET.Element] = {}
    order: list[str] = []
    suite_name = "Kubernetes e2e suite"
    for text in texts:
        root = ET.fromstring(text)
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        for each in suites:
            suite_name = each.get("name") or suite_name
            for case in each.findall("testcase"):
                name = case.get("name", "")
                if name not in cases:
                    order.append(name)
                    cases[name] = case
                elif rank[_result(case)] > rank[_result(cases[name])]:
                    cases[name] = case
    results = [_result(cases[name]) for name in order]
    seconds = sum(float(cases[name].get("time") or 0) for name in order)
    counts = {"tests": str(len(order)), "failures": str(results.count("failed")), "errors": "0",
              "skipped": str(results.count("skipped")), "disabled": "0", "time": "%.3f" % seconds}
    merged = ET.Element("testsuites", {key: counts[key] for key in ("tests", "disabled", "errors", "failures", "time")})
    one = ET.SubElement(merged, "testsuite", dict(counts, name=suite_name))
    for name in order:
        one.append(cases[name])
    return merged


def summary(merged: ET.Element, wall_seconds: float | None = None) -> dict:
    """passed, failed and skipped specs of a merged report, and the names of what failed (a spec, or the
    suite's setup, which counts as a failure too)."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failed_specs: list[str] = []
    for case in merged.iter("testcase"):
        outcome = _result(case)
        name = case.get("name", "")
        if not name.startswith(SPEC_PREFIX) and outcome != "failed":
            continue
        counts[outcome] += 1
        if outcome == "failed":
            failed_specs.append(name)
    one = merged.find("testsuite")
    return dict(counts, failed_specs=failed_specs, wall_seconds=wall_seconds,
                spec_seconds=float((one.get("time") if one is not None else None) or 0))


def summary_text(result: dict, version: str, slice_name: str | None = None) -> str:
    chosen = "conformance" if slice_name is None else "conformance, slice %s" % slice_name
    left = "not [Conformance]" if slice_name is None else "not in the slice"
    lines = ["Kubernetes %s %s: %d passed, %d failed, %d skipped (%s)"
             % (version, chosen, result["passed"], result["failed"], result["skipped"], left)]
    if result["wall_seconds"] is not None:
        lines.append("time: %s (specs %s)" % (_human(result["wall_seconds"]), _human(result["spec_seconds"])))
    lines += ["FAILED " + name for name in result["failed_specs"]]
    return "\n".join(lines) + "\n"


def _human(seconds: float) -> str:
    hours, rest = divmod(int(round(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return "%dh%02dm%02ds" % (hours, minutes, secs) if hours else "%dm%02ds" % (minutes, secs)


def import_command(inventory: str, images: list[dict]) -> list[str]:
    """ansible-playbook tools/conformance.yml: the suite's images into every node's containerd."""
    wanted = [{"name": image["name"], "src": image["src"], "sha256": image["sha256"], "ref": image["ref"],
               "key": "%s %s" % (image["ref"], image["sha256"])} for image in images]
    return ["ansible-playbook", "-i", inventory, str(PLAYBOOK),
            "-e", json.dumps({"conformance_images": wanted}, sort_keys=True)]


def _tee(argv: list[str], log, out=sys.stdout) -> int:
    """Run argv, its output to the log and to out as it comes: ginkgo prints a dot per passed spec, with no
    newline, so the output is passed on as read, not line by line, and flushed (out is a pipe under make)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    while True:
        chunk = proc.stdout.read1(65536)  # type: ignore[attr-defined]
        if not chunk:
            break
        text = chunk.decode("utf-8", errors="replace")
        log.write(text)
        out.write(text)
        log.flush()
        out.flush()
    return proc.wait()


def run(args: argparse.Namespace, out=sys.stdout) -> int:
    bundle_dir = os.path.abspath(args.bundle)
    data = manifest.load(bundle_dir)
    files = suite(data, bundle_dir, args.release)
    problems = check_files(data, bundle_dir)
    if problems:
        raise ConformanceError("the bundle's conformance files do not match manifest.yml:\n  " + "\n  ".join(problems))
    slice_name = getattr(args, "slice", None)
    leaf = files["kubernetes_version"] + ("" if slice_name is None else "-" + slice_name)
    result_dir = os.path.abspath(args.out or os.path.join(ROOT, ".cache", "conformance", leaf))
    runs = commands(files, os.path.abspath(args.kubeconfig), result_dir, args.nodes, slice_name)
    os.makedirs(result_dir, exist_ok=True)
    if args.inventory:
        proc = subprocess.run(import_command(args.inventory, files["images"]), check=False)
        if proc.returncode != 0:
            raise ConformanceError("importing the suite's images failed (ansible-playbook exit %d)" % proc.returncode)
    started = time.monotonic()
    with open(os.path.join(result_dir, "e2e.log"), "w", encoding="utf-8") as log:
        for phase in PHASES:
            os.makedirs(os.path.join(result_dir, phase), exist_ok=True)
            out.write("== %s: %s\n" % (phase, " ".join(runs[phase])))
            _tee(runs[phase], log, out)
    reports = []
    for phase in PHASES:
        path = os.path.join(result_dir, phase, "junit_01.xml")
        if not os.path.isfile(path):
            raise ConformanceError("the %s run wrote no %s; its output is in %s"
                                   % (phase, path, os.path.join(result_dir, "e2e.log")))
        with open(path, encoding="utf-8") as handle:
            reports.append(handle.read())
    merged = merge_junit(reports)
    ET.ElementTree(merged).write(os.path.join(result_dir, "junit_01.xml"), encoding="utf-8", xml_declaration=True)
    result = summary(merged, time.monotonic() - started)
    text = summary_text(result, files["kubernetes_version"], slice_name)
    with open(os.path.join(result_dir, "summary.txt"), "w", encoding="utf-8") as handle:
        handle.write(text)
    out.write("\n" + text + "results: %s (e2e.log, junit_01.xml, summary.txt)\n" % result_dir)
    return 1 if result["failed"] else 0


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="conformance.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = main.add_subparsers(dest="command", required=True)
    each = sub.add_parser("run", help="run the suite against a cluster")
    each.add_argument("--bundle", required=True, help="a bundle built with --with conformance")
    each.add_argument("--kubeconfig", required=True, help="the cluster's admin kubeconfig")
    each.add_argument("-i", "--inventory", help="import the suite's images on this inventory's nodes first")
    each.add_argument("--release", help="one of the bundle's Kubernetes releases (default: its top one)")
    each.add_argument("--out", help="results directory (default: .cache/conformance/<release>)")
    each.add_argument("--nodes", type=int, default=DEFAULT_NODES, help="ginkgo processes of the parallel run")
    each.add_argument("--slice", choices=sorted(SLICES), help="only the [Conformance] specs of this named slice")
    sub.add_parser("slices", help="list the named slices")
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "slices":
        for name, (what, focus) in sorted(SLICES.items()):
            sys.stdout.write("%s: %s\n  focus: %s\n" % (name, what, focus))
        return 0
    try:
        return run(args)
    except (ConformanceError, manifest.ManifestError) as exc:
        sys.stderr.write("conformance.py: %s\n" % exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
