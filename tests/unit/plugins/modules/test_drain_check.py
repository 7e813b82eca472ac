# Unit tests of slipway.cluster.drain_check against the in-memory API server of tests/unit/fixtures/drain_api.py:
# what it reads (once), that it writes nothing in either mode, and what it returns or fails with.
from __future__ import annotations

import pytest

from ansible.module_utils import basic

from ansible_collections.slipway.cluster.plugins.module_utils import _drain_runner
from ansible_collections.slipway.cluster.plugins.modules import drain_check
from ansible_collections.slipway.cluster.tests.unit.fixtures.drain_api import FakeClock, FakeCluster
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import Runner

CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def pod(name, node="w1"):
    return {"metadata": {"name": name, "namespace": "default", "uid": "uid-" + name, "labels": {"app": "web"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "o",
                                              "controller": True}]},
            "spec": {"nodeName": node}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


def issue_cluster(workers=("w1",)):
    clock = FakeClock()
    cluster = FakeCluster(clock, nodes=("cp1",) + tuple(workers), pods=[pod("web-a"), pod("web-b")], pdbs=[
        {"metadata": {"name": "web", "namespace": "default"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}])
    cluster.nodes["cp1"]["spec"]["taints"] = [CONTROL_PLANE_TAINT]
    return cluster


@pytest.fixture(name="warnings")
def fixture_warnings(monkeypatch):
    seen = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, warning: seen.append(warning))
    return seen


@pytest.fixture(name="check")
def fixture_check(monkeypatch, warnings):  # pylint: disable=unused-argument  # warnings: collected
    """check(cluster, args, check_mode=False) -> ("exit" or "fail", result)."""
    def run(cluster, args, check_mode=False):
        runner = Runner(monkeypatch, cluster, keep_connect=True)
        monkeypatch.setattr(_drain_runner, "connect", lambda module: _drain_runner.NodeApi(requester=cluster))
        return runner.run(drain_check, args, check_mode=check_mode)
    return run


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_issues_cluster_is_reported_with_three_reads_and_no_write(check, check_mode):
    cluster = issue_cluster()
    kind, result = check(cluster, {"nodes": ["cp1", "w1"]}, check_mode=check_mode)
    assert (kind, result["changed"]) == ("exit", False)
    assert [(b["node"], b["budgets"], b["cause"]) for b in result["blockers"]] == [("w1", ["default/web"], "nowhere to run")]
    assert result["ignored"] == [] and result["problems"] == []
    assert [(method, path) for method, path, dummy in cluster.calls] == [
        ("get", "/api/v1/nodes"), ("get", "/api/v1/pods"), ("get", "/apis/policy/v1/poddisruptionbudgets")]


def test_a_second_worker_clears_the_check(check):
    kind, result = check(issue_cluster(("w1", "w2")), {"nodes": ["cp1", "w1", "w2"]})
    assert (kind, result["blockers"], [len(d["evict"]) for d in result["drains"]]) == ("exit", [], [0, 2, 2])


def test_an_ignored_budget_is_returned_apart_and_warned_about(check, warnings):
    kind, result = check(issue_cluster(), {"nodes": ["w1"], "ignore": ["default/web"]})
    assert (kind, result["blockers"], [b["budgets"] for b in result["ignored"]]) == ("exit", [], [["default/web"]])
    assert len(warnings) == 1 and warnings[0].startswith("overridden by ignore: node w1: PodDisruptionBudget default/web")


def test_batches_and_removal_are_taken_from_the_options(check):
    cluster = issue_cluster(("w1", "w2"))
    kind, result = check(cluster, {"nodes": [["w1", "w2"]]})
    assert [b["step"] for b in result["blockers"]] == [["w1", "w2"]]
    kind, result = check(issue_cluster(("w1", "w2")), {"nodes": ["w1", "w2"], "after": "removed"})
    assert [b["node"] for b in result["blockers"]] == ["w2"]


def test_bad_input_fails_with_every_problem(check):
    kind, result = check(issue_cluster(), {"nodes": ["w1", "w7"], "ignore": ["default/nope"]})
    assert kind == "fail"
    assert result["msg"] == (
        "node w7 to drain is not in the cluster (no Node object): name nodes that kubectl get nodes lists; "
        "ignore: default/nope names no PodDisruptionBudget of the cluster; write namespace/name of a budget "
        "(kubectl get pdb -A), or all")
