"""tools/conformance.py: the conformance run's commands, results and checks (no cluster, no suite run)."""

import argparse
import io
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

import conformance as run
import pytest
from bundler import manifest

# Names as e2e.test v1.37.1 reports them: the labels after the text, in either order.
SERIAL = "[It] [sig-apps] Daemon set should rollback without unnecessary restarts [Conformance] [Serial]"
DNS = "[It] [sig-network] DNS should provide DNS for the cluster [Conformance]"
PODS = "[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance]"
OTHER = "[It] [sig-storage] CSI mock volume should work"
SETUP = "[SynchronizedBeforeSuite]"


def junit(cases):
    """A report as e2e.test writes it: every spec of the suite, those not run <skipped>."""
    body = []
    for name, outcome, seconds in cases:
        inner = {"skipped": '<skipped message="skipped"></skipped>',
                 "failed": '<failure message="timed out" type="failed">boom</failure>', "passed": ""}[outcome]
        body.append('<testcase name="%s" classname="Kubernetes e2e suite" status="%s" time="%s">%s</testcase>'
                    % (name, outcome, seconds, inner))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="%d"><testsuite name="Kubernetes e2e suite" '
            'tests="%d">%s</testsuite></testsuites>' % (len(cases), len(cases), "".join(body)))


PARALLEL = junit([(SETUP, "passed", 0), (SERIAL, "skipped", 0), (DNS, "passed", 12.5), (PODS, "failed", 300),
                  (OTHER, "skipped", 0)])
SERIAL_RUN = junit([(SETUP, "passed", 0), (SERIAL, "passed", 40), (DNS, "skipped", 0), (PODS, "skipped", 0),
                    (OTHER, "skipped", 0)])


def test_both_runs_make_one_report_with_each_spec_once_as_the_run_that_ran_it():
    merged = run.merge_junit([PARALLEL, SERIAL_RUN])
    cases = {case.get("name"): case for case in merged.iter("testcase")}
    assert list(cases) == [SETUP, SERIAL, DNS, PODS, OTHER]
    assert cases[SERIAL].find("skipped") is None and cases[SERIAL].get("time") == "40"
    assert cases[DNS].find("skipped") is None
    assert cases[PODS].find("failure") is not None
    assert cases[OTHER].find("skipped") is not None
    suite = merged.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped"), suite.get("time")) == ("5", "1", "1", "352.500")
    assert merged.get("failures") == "1"
    # written and read back as one file
    assert len(ET.fromstring(ET.tostring(merged)).findall("testsuite")) == 1


def test_a_spec_failed_in_either_run_stays_failed():
    merged = run.merge_junit([junit([(DNS, "failed", 1)]), junit([(DNS, "passed", 1)])])
    assert run.summary(merged)["failed_specs"] == [DNS]


def test_the_summary_counts_and_names_the_failures():
    result = run.summary(run.merge_junit([PARALLEL, SERIAL_RUN]), wall_seconds=3723)
    # the suite's setup is no spec; it counts only when it failed
    assert (result["passed"], result["failed"], result["skipped"]) == (2, 1, 1)
    failed_setup = run.summary(run.merge_junit([junit([(SETUP, "failed", 1), (DNS, "skipped", 0)])]))
    assert (failed_setup["failed"], failed_setup["failed_specs"]) == (1, [SETUP])
    text = run.summary_text(result, "v1.37.1")
    assert text.splitlines()[0] == "Kubernetes v1.37.1 conformance: 2 passed, 1 failed, 1 skipped (not [Conformance])"
    assert "time: 1h02m03s (specs 5m52s)" in text
    assert "FAILED " + PODS in text


def test_the_parallel_run_leaves_the_serial_specs_to_the_second_run():
    files = {"e2e": "/b/conformance/bin/e2e.test", "ginkgo": "/b/conformance/bin/ginkgo"}
    runs = run.commands(files, "/k/admin.conf", "/out", nodes=3)
    parallel, serial = runs["parallel"], runs["serial"]
    assert parallel[0] == "/b/conformance/bin/ginkgo" and "--nodes=3" in parallel
    assert r"--focus=\[Conformance\]" in parallel and r"--skip=\[Serial\]" in parallel
    assert parallel[parallel.index("--") - 1] == "/b/conformance/bin/e2e.test"
    assert "--report-dir=/out/parallel" in parallel and "--kubeconfig=/k/admin.conf" in parallel
    assert serial[0] == "/b/conformance/bin/e2e.test"
    focus = next(arg for arg in serial if arg.startswith("--ginkgo.focus=")).split("=", 1)[1]
    assert re.search(focus, SERIAL) and re.search(focus, "[It] x [Serial] y [Conformance]")
    assert not re.search(focus, DNS) and not re.search(focus, "[It] x [Serial]")
    assert "--report-dir=/out/serial" in serial
    with pytest.raises(run.ConformanceError, match="--nodes is 0"):
        run.commands(files, "/k", "/out", nodes=0)


def bundle(tmp_path, with_suite=True):
    root = tmp_path / "bundle"
    (root / "conformance" / "bin").mkdir(parents=True)
    (root / "conformance" / "images").mkdir()
    files = {"conformance/bin/e2e.test": b"e2e", "conformance/bin/ginkgo": b"ginkgo",
             "conformance/images/agnhost-2.66.1.tar": b"agnhost"}
    for rel, data in files.items():
        (root / rel).write_bytes(data)
    data = {"format_version": 1, "kubernetes_version": "v1.37.1", "arch": "amd64", "backend": "source",
            "components": {}, "binaries": [], "images": []}
    if with_suite:
        data["conformance"] = {
            "binaries": [manifest.file_entry(str(root), rel, component="conformance")
                         for rel in ("conformance/bin/e2e.test", "conformance/bin/ginkgo")],
            "images": [manifest.file_entry(str(root), "conformance/images/agnhost-2.66.1.tar", name="agnhost-2.66.1",
                                           ref="registry.k8s.io/e2e-test-images/agnhost:2.66.1",
                                           component="conformance")]}
    manifest.write(str(root), data)
    return str(root), manifest.load(str(root))


def test_the_suite_of_the_release_is_found_and_checked(tmp_path):
    root, data = bundle(tmp_path)
    files = run.suite(data, root)
    assert files["e2e"] == os.path.join(root, "conformance/bin/e2e.test")
    assert files["images"][0]["ref"] == "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
    assert run.check_files(data, root) == []
    with open(os.path.join(root, "conformance/bin/ginkgo"), "ab") as handle:
        handle.write(b"changed")
    os.remove(os.path.join(root, "conformance/images/agnhost-2.66.1.tar"))
    assert run.check_files(data, root) == [
        "conformance/bin/ginkgo: its sha256 is not manifest.yml's; copy or build the bundle again",
        "conformance/images/agnhost-2.66.1.tar: listed in manifest.yml but missing; copy the whole bundle again"]
    with pytest.raises(run.ConformanceError, match="holds Kubernetes v1.37.1, not v1.36.5"):
        run.suite(data, root, "v1.36.5")


def test_a_bundle_without_the_suite_names_the_build_that_adds_it(tmp_path):
    root, data = bundle(tmp_path, with_suite=False)
    with pytest.raises(run.ConformanceError, match=r"no conformance suite for Kubernetes v1.37.1; build it with "
                                                   r"`python3 tools/bundle/build.py --with conformance"):
        run.suite(data, root)


def test_the_images_go_to_the_import_playbook_as_one_json_extra_var(tmp_path):
    root, data = bundle(tmp_path)
    argv = run.import_command("inv.yml", run.suite(data, root)["images"])
    assert argv[:4] == ["ansible-playbook", "-i", "inv.yml", str(run.PLAYBOOK)]
    images = json.loads(argv[argv.index("-e") + 1])["conformance_images"]
    assert images == [{"name": "agnhost-2.66.1", "src": os.path.join(root, "conformance/images/agnhost-2.66.1.tar"),
                       "sha256": data["conformance"]["images"][0]["sha256"],
                       "ref": "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
                       # What each node records of what it imported: an archive built again is imported again.
                       "key": "registry.k8s.io/e2e-test-images/agnhost:2.66.1 "
                              + data["conformance"]["images"][0]["sha256"]}]


def test_a_run_writes_the_merged_report_and_the_summary(tmp_path, monkeypatch):
    """The two runs stand in for e2e.test: each writes its report, as the suite does, and prints a line."""
    root, _data = bundle(tmp_path)
    out = tmp_path / "results"
    seen = []

    def tee(argv, log, out=None):
        phase = "parallel" if argv[0].endswith("ginkgo") else "serial"
        seen.append(phase)
        report_dir = next(arg.split("=", 1)[1] for arg in argv if arg.startswith("--report-dir="))
        with open(os.path.join(report_dir, "junit_01.xml"), "w", encoding="utf-8") as handle:
            handle.write(PARALLEL if phase == "parallel" else SERIAL_RUN)
        log.write("ran %s\n" % phase)
        return 0

    monkeypatch.setattr(run, "_tee", tee)
    args = argparse.Namespace(bundle=root, kubeconfig="/k", inventory=None, release=None, out=str(out), nodes=2)
    printed = io.StringIO()
    assert run.run(args, out=printed) == 1
    assert seen == ["parallel", "serial"]
    assert (out / "e2e.log").read_text() == "ran parallel\nran serial\n"
    merged = ET.parse(str(out / "junit_01.xml")).getroot()
    assert merged.find("testsuite").get("failures") == "1"
    assert (out / "summary.txt").read_text().startswith("Kubernetes v1.37.1 conformance: 2 passed, 1 failed")
    assert "results: %s" % out in printed.getvalue()


def test_a_changed_suite_file_stops_the_run_before_anything_runs(tmp_path, monkeypatch):
    root, _data = bundle(tmp_path)
    with open(os.path.join(root, "conformance/bin/e2e.test"), "ab") as handle:
        handle.write(b"x")
    monkeypatch.setattr(run, "_tee", lambda *args, **kwargs: pytest.fail("ran"))
    monkeypatch.setattr(run.subprocess, "run", lambda *args, **kwargs: pytest.fail("imported"))
    assert run.main(["run", "--bundle", root, "--kubeconfig", "/k", "-i", "inv.yml", "--out", str(tmp_path / "o")]) == 2


# The [Conformance] specs of e2e.test v1.37.1 as its dry run names them, labels last (e2e.test --ginkgo.dry-run
# --ginkgo.focus='\[Conformance\]' --ginkgo.v, the spec lines).
SPECS_V1_37_1 = os.path.join(os.path.dirname(__file__), "data", "e2e-conformance-specs-v1.37.1.txt")


def specs():
    with open(SPECS_V1_37_1, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def test_the_list_is_the_whole_suite():
    every = specs()
    assert len(every) == 462 and all("[Conformance]" in name for name in every)
    assert sum("[Serial]" in name for name in every) == 29


def test_the_slipway_slice_is_its_subjects_whole():
    """Every [Conformance] spec of the slice's subjects, none of the others: no spec of a subject is left out."""
    focus = re.compile(run.SLICES["slipway"][1])
    chosen = [name for name in specs() if focus.search(name)]
    subjects = re.compile(r"^\[sig-network\] (DNS|Services|Networking Granular|Proxy|HostPort|API Server) "
                          r"|^\[sig-node\] (Kubelet when|KubeletManagedEtcHosts|Container Lifecycle Hook|Sysctls) "
                          r"|^\[sig-node\] Pods should support (remote command|retrieving logs) "
                          r"|^\[sig-cli\] Kubectl (logs|client Proxy server) ")
    assert chosen == [name for name in specs() if subjects.search(name)]
    assert len(chosen) == 50
    assert sum(name.startswith("[sig-network] DNS ") for name in chosen) == 8
    assert sum(name.startswith("[sig-network] Services ") for name in chosen) == 15
    # Not "Service endpoints latency" nor EndpointSlice: the controllers', not what slipway sets up.
    assert not any(name.startswith(("[sig-network] Service endpoints", "[sig-network] EndpointSlice"))
                   for name in chosen)


def test_a_slice_runs_its_specs_in_both_runs_by_the_suite_s_labels():
    files = {"e2e": "/b/e2e.test", "ginkgo": "/b/ginkgo"}
    runs = run.commands(files, "/k", "/out", nodes=2, slice_name="slipway")
    focus = "--focus=" + run.SLICES["slipway"][1]
    assert focus in runs["parallel"] and "--label-filter=Conformance && !Serial" in runs["parallel"]
    assert not any(arg.startswith("--skip=") for arg in runs["parallel"])
    assert "--ginkgo." + focus[2:] in runs["serial"] and "--ginkgo.label-filter=Conformance && Serial" in runs["serial"]
    with pytest.raises(run.ConformanceError, match="no such slice; the slices are slipway"):
        run.commands(files, "/k", "/out", slice_name="fast")


def test_a_slice_s_results_go_to_a_directory_of_their_own(tmp_path, monkeypatch):
    root, _data = bundle(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run, "ROOT", tmp_path)
    seen = []

    def tee(argv, log, out=None):
        report_dir = next(arg.split("=", 1)[1] for arg in argv if arg.startswith("--report-dir="))
        seen.append(report_dir)
        with open(os.path.join(report_dir, "junit_01.xml"), "w", encoding="utf-8") as handle:
            handle.write(SERIAL_RUN)
        return 0

    monkeypatch.setattr(run, "_tee", tee)
    args = argparse.Namespace(bundle=root, kubeconfig="/k", inventory=None, release=None, out=None, nodes=2,
                              slice="slipway")
    printed = io.StringIO()
    assert run.run(args, out=printed) == 0
    result_dir = tmp_path / ".cache" / "conformance" / "v1.37.1-slipway"
    assert seen == [str(result_dir / "parallel"), str(result_dir / "serial")]
    assert (result_dir / "summary.txt").read_text().startswith(
        "Kubernetes v1.37.1 conformance, slice slipway: 1 passed, 0 failed")


def test_the_slices_are_listed(capsys):
    assert run.main(["slices"]) == 0
    assert capsys.readouterr().out.startswith("slipway: ")


def test_the_output_is_passed_on_as_it_comes_not_by_line(tmp_path):
    """ginkgo's progress is a dot per spec with no newline: it reaches the console while the run goes on. The child
    prints two dots and waits for the console to have them (a file the console's writer makes) before it ends."""
    seen = tmp_path / "seen"

    class Console(io.StringIO):
        def write(self, text):
            if ".." in self.getvalue() + text:
                seen.touch()
            return super().write(text)

    script = ("import os, sys, time\nsys.stdout.write('..'); sys.stdout.flush()\n"
              "for _ in range(100):\n    if os.path.exists(%r): break\n    time.sleep(0.1)\n"
              "sys.stdout.write(' seen\\n' if os.path.exists(%r) else ' never seen\\n')\n" % (str(seen), str(seen)))
    log, out = io.StringIO(), Console()
    assert run._tee([sys.executable, "-c", script], log, out) == 0
    assert log.getvalue() == out.getvalue() == ".. seen\n"
