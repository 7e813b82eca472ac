"""Tests of bench.fleet's pure parts: the order of its steps, the SlipwayCluster it applies, the direct run's
inventory and variables (the fleet Job's own), reading a cluster's state and a Job's time, and the table."""

import os
import pathlib

import pytest

from bench import fleet as bench_fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EXAMPLE = bench_fleet.lab_fleet.example(pathlib.Path(ROOT, "docs", "fleet.md").read_text(encoding="utf-8"))
KUBELET = {"evictionHard": {"nodefs.available": "1%"}}


def doc(node="t1", address="10.88.100.16"):
    return bench_fleet.cluster_doc(EXAMPLE, node, address, "1.37.1", KUBELET)


def test_the_steps_reset_first_alternate_the_rounds_and_end_with_the_pair():
    steps = bench_fleet.schedule(("t1", "t2"), 2)
    assert steps == [
        ("prepare", [("reset-direct", "t1"), ("reset-direct", "t2")]),
        ("round 1", [("fleet", "t1"), ("direct", "t2")]),
        ("round 1 reset", [("reset-fleet", "t1"), ("reset-direct", "t2")]),
        ("round 2", [("direct", "t1"), ("fleet", "t2")]),
        ("round 2 reset", [("reset-fleet", "t2"), ("reset-direct", "t1")]),
        ("at once", [("fleet-at-once", "t1,t2")]),
        ("at once reset", [("reset-fleet", "t1"), ("reset-fleet", "t2")]),
    ]
    # Every step that creates is followed by the reset of the nodes it used.
    for index, (label, runs) in enumerate(steps):
        if not label.endswith("reset") and label != "prepare":
            used = sorted(one for _how, node in runs for one in node.split(","))
            assert sorted(node for _how, node in steps[index + 1][1]) == used


def test_the_cluster_is_the_pages_example_named_after_its_node_and_reset_with_its_images():
    obj = doc()
    assert obj["metadata"] == {"name": "bench-t1", "namespace": "fleet"}
    assert [h["address"] for h in obj["spec"]["hosts"]] == ["10.88.100.16"]
    assert obj["spec"]["variables"]["reset_containerd_images"] == "true"
    assert obj["spec"]["variables"]["control_plane_coredns_upstreams"] == EXAMPLE["spec"]["variables"]["control_plane_coredns_upstreams"]
    assert "reset_containerd_images" not in EXAMPLE["spec"]["variables"]


def test_the_direct_run_gets_the_jobs_inventory_and_variables_with_this_machines_bundle_and_key():
    obj = doc()
    inventory, variables = bench_fleet.direct_run(obj, "create", pathlib.Path("/b"), pathlib.Path("/k/id"))
    job_vars = bench_fleet.fleet_spec.operation_vars("create", ["cp1"], obj["spec"], "bench-t1")
    assert inventory == bench_fleet.fleet_spec.inventory(obj["spec"])
    assert inventory["all"]["hosts"]["cp1"]["ansible_host"] == "10.88.100.16"
    assert variables["slipway_artifacts_bundle_dir"] == "/b" and job_vars["slipway_artifacts_bundle_dir"] == "/bundle"
    assert variables["ansible_ssh_private_key_file"] == "/k/id"
    assert {k: v for k, v in variables.items() if k in job_vars and k != "slipway_artifacts_bundle_dir"} == \
        {k: v for k, v in job_vars.items() if k != "slipway_artifacts_bundle_dir"}
    assert variables["control_plane_kubelet_configuration"] == KUBELET
    _inventory, reset = bench_fleet.direct_run(obj, "reset", pathlib.Path("/b"), pathlib.Path("/k/id"))
    assert reset["reset_confirm"] == "yes" and reset["reset_containerd_images"] is True


@pytest.mark.parametrize("obj, state", [
    (None, "waiting"),
    ({"metadata": {"generation": 1}}, "waiting"),
    ({"metadata": {"generation": 1}, "status": {"phase": "Provisioning"}}, "waiting"),
    ({"metadata": {"generation": 2}, "status": {"phase": "Running", "appliedGeneration": 1}}, "waiting"),
    ({"metadata": {"generation": 2}, "status": {"phase": "Running", "appliedGeneration": 2}}, "running"),
    ({"metadata": {"generation": 1}, "status": {"phase": "Failed"}}, "failed"),
])
def test_the_cluster_state(obj, state):
    assert bench_fleet.cluster_state(obj) == state


def test_the_jobs_time_is_its_start_to_its_completion():
    op = {"status": {"startTime": "2026-11-28T04:00:05Z", "completionTime": "2026-11-28T04:02:15Z"}}
    assert bench_fleet.job_seconds(op) == 130
    assert bench_fleet.job_seconds({"status": {"startTime": "2026-11-28T04:00:05Z"}}) is None
    assert bench_fleet.job_seconds({}) is None


def test_the_table_and_the_comparisons():
    figures = [
        bench_fleet.Figure("round 1", "SlipwayCluster to Running", 110.4, 101.0, (3.0, 4.5), "t1"),
        bench_fleet.Figure("round 1", "site.yml directly", 100.0, None, (4.5, 4.0), "t2"),
        bench_fleet.Figure("round 2", "site.yml directly", 96.0, None, (4.0, 4.0), "t1"),
        bench_fleet.Figure("round 2", "SlipwayCluster to Running", 109.6, 95.0, (4.0, 4.0), "t2"),
        bench_fleet.Figure("at once", "SlipwayCluster to Running", 140.0, 130.0, (3.0, 6.0), "t1"),
        bench_fleet.Figure("at once", "both SlipwayClusters to Running", 150.0, None, (3.0, 6.0), "t1,t2"),
    ]
    lines = bench_fleet.table(figures).splitlines()
    assert lines[2] == "| round 1 | SlipwayCluster to Running | t1 | 110 s | 101 s | 3.0, 4.5 |"
    assert lines[3] == "| round 1 | site.yml directly | t2 | 100 s |  | 4.5, 4.0 |"
    assert bench_fleet.summary(figures) == [
        "SlipwayCluster to Running 110 s against site.yml directly 98 s (mean of 2): the fleet adds 12 s (12 %)",
        "two clusters one after the other 220 s (rounds 1 and 2), at once 150 s (0.68 of the time)",
    ]
    assert bench_fleet.summary(figures[:1]) == []
    faster = [bench_fleet.Figure("round 1", "SlipwayCluster to Running", 150.0, None, (0.0, 0.0), "t1"),
              bench_fleet.Figure("round 1", "site.yml directly", 200.0, None, (0.0, 0.0), "t2")]
    assert bench_fleet.summary(faster) == [
        "SlipwayCluster to Running 150 s against site.yml directly 200 s (mean of 1): the fleet took 50 s less (25 %)"]
