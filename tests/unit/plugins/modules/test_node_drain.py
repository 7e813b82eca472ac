# Unit tests of slipway.cluster.node_drain against an in-memory API server with a fake clock
# (tests/unit/fixtures/drain_api.py): which calls a drain makes, its retries and waits, and what
# it returns or fails with.
from __future__ import annotations

import math

import pytest

from ansible.module_utils import basic

from ansible_collections.slipway.cluster.plugins.module_utils import _drain_runner
from ansible_collections.slipway.cluster.plugins.modules import node_drain
from ansible_collections.slipway.cluster.tests.unit.fixtures.drain_api import FakeClock, FakeCluster
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import Runner

EVICT = "/api/v1/namespaces/%s/pods/%s/eviction"
POD = "/api/v1/namespaces/%s/pods/%s"


def pod(name, namespace="default", owner="ReplicaSet", phase="Running", labels=None, annotations=None, node="w1"):
    metadata = {"name": name, "namespace": namespace, "uid": "uid-" + name, "labels": labels or {}}
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "o", "uid": "o", "controller": True}]
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"nodeName": node}, "status": {"phase": phase}}


def web_pdb(name="web", namespace="default"):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}


@pytest.fixture(name="clock")
def fixture_clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(_drain_runner, "time", clock)
    return clock


@pytest.fixture(name="warnings")
def fixture_warnings(monkeypatch):
    seen = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, warning: seen.append(warning))
    return seen


@pytest.fixture(name="drain")
def fixture_drain(monkeypatch, clock, warnings):  # pylint: disable=unused-argument  # warnings: collected
    """drain(cluster, args, check_mode=False) -> ("exit" or "fail", result)."""
    def run(cluster, args=None, check_mode=False):
        runner = Runner(monkeypatch, cluster, keep_connect=True)
        monkeypatch.setattr(_drain_runner, "connect", lambda module: _drain_runner.NodeApi(requester=cluster))
        return runner.run(node_drain, dict({"name": "w1"}, **(args or {})), check_mode=check_mode)
    return run


def test_a_missing_node_fails_whatever_the_state(drain, clock):
    for state in ("drained", "cordoned", "uncordoned"):
        kind, result = drain(FakeCluster(clock), {"name": "w9", "state": state})
        assert (kind, result["msg"], result["changed"]) == ("fail", "node w9 not found", False)


@pytest.mark.parametrize("state, before, after", [
    ("cordoned", False, True),
    ("cordoned", True, True),
    ("uncordoned", True, False),
    ("uncordoned", False, False),
])
def test_cordon_and_uncordon_four_ways(drain, clock, state, before, after):
    cluster = FakeCluster(clock, pods=[pod("web-1")])
    if before:
        cluster.nodes["w1"]["spec"]["unschedulable"] = True
    changes = before != after
    kind, result = drain(cluster, {"state": state}, check_mode=True)
    assert (kind, result["changed"], result["cordoned"]) == ("exit", changes, after)
    assert cluster.writes() == []
    for dummy in range(2):
        kind, result = drain(cluster, {"state": state})
        assert (kind, result["changed"], result["cordoned"]) == ("exit", changes, after)
        assert bool(cluster.nodes["w1"]["spec"].get("unschedulable")) is after
        assert "unschedulable" in cluster.nodes["w1"]["spec"] or not after, "uncordon removes the field"
        changes = False
    assert cluster.pod("default/web-1") is not None, "cordon and uncordon leave the pods alone"


def test_drain_skips_deletes_and_evicts(drain, clock):
    pods = [pod("proxy", namespace="kube-system", owner="DaemonSet"),
            pod("etcd-w1", namespace="kube-system", owner=None, annotations={"kubernetes.io/config.mirror": "x"}),
            pod("job-1", owner="Job", phase="Succeeded"),
            pod("web-1"),
            pod("db-0", namespace="shop", owner="StatefulSet"),
            pod("other", node="w2")]
    cluster = FakeCluster(clock, nodes=("w1", "w2"), pods=pods)
    kind, result = drain(cluster, {"grace_period": 5})
    assert kind == "exit", result
    assert (result["changed"], result["cordoned"], result["node"]) == (True, True, "w1")
    assert result["skipped"] == [{"namespace": "kube-system", "name": "proxy", "reason": "daemonset"},
                                 {"namespace": "kube-system", "name": "etcd-w1", "reason": "mirror"}]
    assert result["deleted"] == ["default/job-1"]
    assert result["evicted"] == ["default/web-1", "shop/db-0"]
    assert result["forced"] == result["blocking"] == []
    assert cluster.writes() == [("patch", "/api/v1/nodes/w1"), ("delete", POD % ("default", "job-1")),
                                ("post", EVICT % ("default", "web-1")), ("post", EVICT % ("shop", "db-0"))]
    eviction = [body for method, path, body in cluster.calls if path == EVICT % ("default", "web-1")][0]
    assert eviction == {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-1", "namespace": "default"},
                        "deleteOptions": {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 5}}
    assert sorted(key for key in cluster.pods) == [("default", "other"), ("kube-system", "etcd-w1"), ("kube-system", "proxy")]
    assert clock.sleeps == []

    kind, again = drain(cluster)
    assert (kind, again["changed"], again["evicted"], again["deleted"]) == ("exit", False, [], [])
    assert len(again["skipped"]) == 2


def test_check_mode_reports_and_writes_nothing(drain, clock):
    cluster = FakeCluster(clock, pods=[pod("web-1"), pod("job-1", owner="Job", phase="Failed"),
                                       pod("proxy", owner="DaemonSet")], pdbs=[web_pdb()])
    cluster.refuse["default/web-1"] = math.inf
    kind, result = drain(cluster, check_mode=True)
    assert (kind, result["changed"], result["cordoned"]) == ("exit", True, True)
    assert (result["evicted"], result["deleted"]) == (["default/web-1"], ["default/job-1"])
    assert cluster.writes() == [] and not cluster.nodes["w1"]["spec"]

    only_daemonsets = FakeCluster(clock, pods=[pod("proxy", owner="DaemonSet")])
    only_daemonsets.nodes["w1"]["spec"]["unschedulable"] = True
    kind, result = drain(only_daemonsets, check_mode=True)
    assert (kind, result["changed"], result["evicted"]) == ("exit", False, [])


def test_refused_pods_fail_before_any_eviction(drain, clock):
    cluster = FakeCluster(clock, pods=[pod("web-1"), pod("bare", namespace="tools", owner=None)])
    kind, result = drain(cluster)
    assert kind == "fail"
    assert result["msg"] == ("cannot drain node w1, nothing was evicted: tools/bare has no controller to recreate it "
                             "(set force: true to delete it anyway)")
    assert result["refused"] == [{"namespace": "tools", "name": "bare", "reason": "unmanaged"}]
    assert cluster.writes() == [("patch", "/api/v1/nodes/w1")], "cordoned first, as kubectl drain does"
    assert result["cordoned"] is True and result["evicted"] == []


def test_force_evicts_unmanaged_pods_with_a_warning(drain, clock, warnings):
    cluster = FakeCluster(clock, pods=[pod("bare", namespace="tools", owner=None)])
    kind, result = drain(cluster, {"force": True})
    assert (kind, result["evicted"], result["forced"]) == ("exit", ["tools/bare"], [])
    assert any("tools/bare" in warning and "nothing will recreate" in warning for warning in warnings)


def test_refused_evictions_are_retried_every_two_seconds(drain, clock):
    cluster = FakeCluster(clock, pods=[pod("web-1", labels={"app": "web"}), pod("api-1")], pdbs=[web_pdb()])
    cluster.refuse["default/web-1"] = 5
    kind, result = drain(cluster, {"timeout": 60})
    assert kind == "exit", result
    assert result["evicted"] == ["default/api-1", "default/web-1"]
    evictions = [path for method, path in cluster.writes() if path.endswith("/eviction")]
    assert evictions == [EVICT % ("default", "web-1"), EVICT % ("default", "api-1")] + [EVICT % ("default", "web-1")] * 3
    assert clock.sleeps == [2.0, 2.0, 2.0]


def test_timeout_fails_naming_pods_and_their_pdbs(drain, clock):
    pods = [pod("web-1", labels={"app": "web"}), pod("web-2", namespace="shop", labels={"app": "web"}), pod("api-1")]
    pdbs = [web_pdb(), web_pdb("web-a", "shop"), web_pdb("web-b", "shop"), web_pdb("web", "elsewhere")]
    cluster = FakeCluster(clock, pods=pods, pdbs=pdbs)
    cluster.refuse["default/web-1"] = cluster.refuse["shop/web-2"] = math.inf
    kind, result = drain(cluster, {"timeout": 7})
    assert kind == "fail"
    assert result["msg"] == (
        "node w1 not drained within 7 s: 2 pods still blocking: default/web-1 (PodDisruptionBudget default/web), "
        "shop/web-2 (PodDisruptionBudgets shop/web-a, shop/web-b). The node stays cordoned. Raise timeout, or set "
        "force: true to delete these pods without their PodDisruptionBudgets' consent")
    message = "Cannot evict pod as it would violate the pod's disruption budget."
    assert result["blocking"] == [
        {"namespace": "default", "name": "web-1", "reason": "eviction refused", "pdbs": ["default/web"], "message": message},
        {"namespace": "shop", "name": "web-2", "reason": "eviction refused", "pdbs": ["shop/web-a", "shop/web-b"],
         "message": message}]
    assert (result["evicted"], result["forced"], result["cordoned"]) == (["default/api-1"], [], True)
    assert clock.now == 7 and clock.sleeps == [2.0, 2.0, 2.0, 1.0]
    assert cluster.nodes["w1"]["spec"]["unschedulable"] is True
    assert not [call for call in cluster.writes() if call[0] == "delete"]


def test_force_deletes_what_still_blocks(drain, clock, warnings):
    cluster = FakeCluster(clock, pods=[pod("web-1", labels={"app": "web"}), pod("db-0", owner="StatefulSet")],
                          pdbs=[web_pdb()])
    cluster.refuse["default/web-1"] = math.inf
    cluster.linger["default/db-0"] = 100
    kind, result = drain(cluster, {"timeout": 4, "force": True, "grace_period": 0})
    assert kind == "exit", result
    assert (result["changed"], result["evicted"], result["forced"]) == (True, ["default/db-0"], ["default/web-1", "default/db-0"])
    assert [(entry["name"], entry["reason"], entry["pdbs"]) for entry in result["blocking"]] == [
        ("web-1", "eviction refused", ["default/web"]), ("db-0", "still terminating", [])]
    deletes = [(path, body) for method, path, body in cluster.calls if method == "delete"]
    assert deletes == [(POD % ("default", path), {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
                       for path in ("web-1", "db-0")]
    assert cluster.pods == {}
    assert any("default/web-1 (PodDisruptionBudget default/web)" in warning for warning in warnings)


def test_evicted_pods_are_waited_for_and_a_replacement_counts_as_gone(drain, clock):
    cluster = FakeCluster(clock, pods=[pod("db-0", owner="StatefulSet"), pod("web-1")])
    cluster.linger["default/db-0"] = 3
    cluster.linger["default/web-1"] = 5
    cluster.replace.add("default/db-0")
    kind, result = drain(cluster, {"timeout": 30})
    assert (kind, result["evicted"], result["blocking"]) == ("exit", ["default/db-0", "default/web-1"], [])
    assert clock.now == 5 and clock.sleeps == [1.0] * 5
    assert cluster.pod("default/db-0")["metadata"]["uid"] == "uid-db-0-new"


def test_pods_still_terminating_at_the_timeout_fail(drain, clock):
    cluster = FakeCluster(clock, pods=[pod("db-0", owner="StatefulSet")])
    cluster.linger["default/db-0"] = 100
    kind, result = drain(cluster, {"timeout": 0})
    assert kind == "fail"
    assert result["msg"].startswith("node w1 not drained within 0 s: 1 pod still blocking: default/db-0 (evicted, "
                                    "still terminating). The node stays cordoned.")
    assert result["evicted"] == ["default/db-0"] and clock.sleeps == []


def test_an_eviction_error_fails_with_what_was_done(drain, clock):
    cluster = FakeCluster(clock, pods=[pod("api-1"), pod("web-1")])
    cluster.fail_eviction["default/web-1"] = (500, "Internal Server Error",
                                              "This pod has more than one PodDisruptionBudget, which the eviction "
                                              "subresource does not support.")
    kind, result = drain(cluster)
    assert kind == "fail"
    assert result["msg"] == ("POST /api/v1/namespaces/default/pods/web-1/eviction failed: 500 Internal Server Error: "
                             "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
    assert (result["api_status"], result["evicted"], result["cordoned"]) == (500, ["default/api-1"], True)


@pytest.mark.parametrize("args, msg", [
    ({"timeout": -1}, "timeout must be 0 or more, not -1"),
    ({"grace_period": -5}, "grace_period must be 0 or more, not -5"),
])
def test_negative_durations_fail(drain, clock, args, msg):
    cluster = FakeCluster(clock)
    kind, result = drain(cluster, args)
    assert (kind, result["msg"], cluster.calls) == ("fail", msg, [])
