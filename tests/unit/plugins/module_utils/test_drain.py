# Unit tests of the pure drain rules: which pods a drain skips, deletes, refuses or evicts, which
# PodDisruptionBudgets select a pod, and the messages the node_drain module fails with.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils import _drain as drain


def pod(name, namespace="default", owner=None, phase="Running", labels=None, annotations=None, volumes=None):
    metadata = {"name": name, "namespace": namespace, "uid": "uid-" + name}
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "owner", "uid": "o", "controller": True}]
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"nodeName": "w1", "volumes": volumes or []}, "status": {"phase": phase}}


def pdb(name, selector, namespace="default"):
    spec = {"minAvailable": 1}
    if selector is not None:
        spec["selector"] = selector
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


MIRROR = {drain.MIRROR_ANNOTATION: "0123abcd"}
EMPTYDIR = [{"name": "scratch", "emptyDir": {}}]


@pytest.mark.parametrize("the_pod, force, emptydir_ok, where, reason", [
    (pod("web", owner="ReplicaSet"), False, True, "evict", None),
    (pod("db-0", owner="StatefulSet"), False, True, "evict", None),
    (pod("job-x", owner="Job"), False, True, "evict", None),
    (pod("proxy", owner="DaemonSet"), False, True, "skipped", drain.SKIP_DAEMONSET),
    (pod("proxy", owner="DaemonSet"), True, True, "skipped", drain.SKIP_DAEMONSET),
    (pod("kube-apiserver-cp1", annotations=MIRROR), False, True, "skipped", drain.SKIP_MIRROR),
    (pod("kube-apiserver-cp1", annotations=MIRROR, phase="Failed"), True, True, "skipped", drain.SKIP_MIRROR),
    (pod("done", phase="Succeeded"), False, True, "delete", None),
    (pod("crashed", owner="DaemonSet", phase="Failed"), False, True, "delete", None),
    (pod("done-scratch", phase="Succeeded", volumes=EMPTYDIR), False, False, "delete", None),
    (pod("bare"), False, True, "refused", drain.REFUSE_UNMANAGED),
    (pod("bare"), True, True, "evict", None),
    (pod("scratch", owner="ReplicaSet", volumes=EMPTYDIR), False, True, "evict", None),
    (pod("scratch", owner="ReplicaSet", volumes=EMPTYDIR), True, False, "refused", drain.REFUSE_EMPTYDIR),
    (pod("pending", owner="ReplicaSet", phase="Pending"), False, True, "evict", None),
])
def test_plan_sorts_each_pod(the_pod, force, emptydir_ok, where, reason):
    plan = drain.plan_drain([the_pod], force=force, delete_emptydir_data=emptydir_ok)
    places = {"evict": plan.evict, "delete": plan.delete, "skipped": plan.skipped, "refused": plan.refused}
    assert [name for name, found in places.items() if found] == [where]
    if reason:
        assert places[where] == [{"namespace": "default", "name": drain.pod_name(the_pod), "reason": reason}]
    else:
        assert places[where] == [the_pod]


def test_plan_names_every_reason_and_keeps_order():
    pods = [pod("b", owner="ReplicaSet"), pod("both", volumes=EMPTYDIR), pod("a", owner="ReplicaSet"), pod("bare")]
    plan = drain.plan_drain(pods, delete_emptydir_data=False)
    assert [drain.pod_key(p) for p in plan.evict] == ["default/b", "default/a"]
    assert plan.refused == [
        {"namespace": "default", "name": "both", "reason": drain.REFUSE_EMPTYDIR},
        {"namespace": "default", "name": "both", "reason": drain.REFUSE_UNMANAGED},
        {"namespace": "default", "name": "bare", "reason": drain.REFUSE_UNMANAGED},
    ]
    assert plan.unmanaged == []


def test_force_lets_unmanaged_pods_through_and_names_them():
    plan = drain.plan_drain([pod("bare", namespace="tools"), pod("web", owner="ReplicaSet")], force=True)
    assert [drain.pod_key(p) for p in plan.evict] == ["tools/bare", "default/web"]
    assert plan.unmanaged == ["tools/bare"] and plan.refused == []


def test_an_owner_that_is_not_the_controller_does_not_count():
    the_pod = pod("bare")
    the_pod["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "x", "uid": "u"},
                                              {"kind": "ReplicaSet", "name": "y", "uid": "v", "controller": False}]
    assert drain.controller_of(the_pod) is None
    assert drain.plan_drain([the_pod]).refused[0]["reason"] == drain.REFUSE_UNMANAGED


@pytest.mark.parametrize("selector, labels, selected", [
    ({}, {"app": "web"}, True),
    ({}, None, True),
    (None, {"app": "web"}, False),
    ({"matchLabels": {"app": "web"}}, {"app": "web", "tier": "front"}, True),
    ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
    ({"matchLabels": {"app": "web"}}, None, False),
    ({"matchLabels": {"app": "web", "tier": "front"}}, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}, {"app": "api"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, {"tier": "web"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}, {"app": "web"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}, {}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}, {"app": "db"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": ""}, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"tier": "x"}, False),
    ({"matchExpressions": [{"key": "canary", "operator": "DoesNotExist"}]}, {"app": "web"}, True),
    ({"matchExpressions": [{"key": "canary", "operator": "DoesNotExist"}]}, {"canary": "yes"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, {"app": "2"}, False),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "track", "operator": "In", "values": ["stable"]}]},
     {"app": "web", "track": "stable"}, True),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "track", "operator": "In", "values": ["stable"]}]},
     {"app": "web", "track": "canary"}, False),
])
def test_selector_matches(selector, labels, selected):
    assert drain.selector_matches(selector, labels) is selected


@pytest.mark.parametrize("budget, selected", [
    (pdb("web", {"matchLabels": {"app": "web"}}), True),
    (pdb("web", {"matchLabels": {"app": "web"}}, namespace="other"), False),
    (pdb("all", {}), True),
    (pdb("none", None), False),
    (pdb("db", {"matchLabels": {"app": "db"}}), False),
])
def test_pdb_selects_only_in_the_pods_namespace(budget, selected):
    assert drain.pdb_selects(budget, pod("web-0", labels={"app": "web"})) is selected


def test_pdbs_selecting_are_sorted_namespace_names():
    budgets = [pdb("z", {"matchLabels": {"app": "web"}}), pdb("a", {}), pdb("x", {}, namespace="other")]
    assert drain.pdbs_selecting(budgets, pod("web-0", labels={"app": "web"})) == ["default/a", "default/z"]


@pytest.mark.parametrize("entry, text", [
    ({"namespace": "shop", "name": "web-0", "reason": drain.BLOCK_REFUSED, "pdbs": ["shop/web"], "message": "x"},
     "shop/web-0 (PodDisruptionBudget shop/web)"),
    ({"namespace": "shop", "name": "web-0", "reason": drain.BLOCK_REFUSED, "pdbs": ["shop/a", "shop/b"], "message": ""},
     "shop/web-0 (PodDisruptionBudgets shop/a, shop/b)"),
    ({"namespace": "shop", "name": "web-0", "reason": drain.BLOCK_REFUSED, "pdbs": [], "message": "Too many requests "},
     "shop/web-0 (eviction refused: Too many requests)"),
    ({"namespace": "shop", "name": "web-0", "reason": drain.BLOCK_REFUSED, "pdbs": [], "message": ""},
     "shop/web-0 (eviction refused)"),
    ({"namespace": "shop", "name": "db-1", "reason": drain.BLOCK_TERMINATING, "pdbs": [], "message": ""},
     "shop/db-1 (evicted, still terminating)"),
])
def test_describe_blocking(entry, text):
    assert drain.describe_blocking(entry) == text


def test_blocking_entry_names_pdbs_only_for_a_refused_eviction():
    budgets = [pdb("web", {"matchLabels": {"app": "web"}})]
    the_pod = pod("web-0", labels={"app": "web"})
    assert drain.blocking_entry(the_pod, drain.BLOCK_REFUSED, budgets, "no") == {
        "namespace": "default", "name": "web-0", "reason": drain.BLOCK_REFUSED, "pdbs": ["default/web"], "message": "no"}
    assert drain.blocking_entry(the_pod, drain.BLOCK_TERMINATING, budgets)["pdbs"] == []


@pytest.mark.parametrize("count, expected", [
    (1, "node w1 not drained within 30 s: 1 pod still blocking: shop/web-0 (PodDisruptionBudget shop/web). "
        "The node stays cordoned. Raise timeout, or set force: true to delete these pods without their "
        "PodDisruptionBudgets' consent"),
    (2, "node w1 not drained within 30 s: 2 pods still blocking: shop/web-0 (PodDisruptionBudget shop/web), "
        "shop/db-1 (evicted, still terminating). The node stays cordoned. Raise timeout, or set force: true to "
        "delete these pods without their PodDisruptionBudgets' consent"),
])
def test_timeout_message(count, expected):
    entries = [{"namespace": "shop", "name": "web-0", "reason": drain.BLOCK_REFUSED, "pdbs": ["shop/web"]},
               {"namespace": "shop", "name": "db-1", "reason": drain.BLOCK_TERMINATING, "pdbs": []}]
    assert drain.timeout_message("w1", 30, entries[:count]) == expected


def test_refusal_message():
    refused = [{"namespace": "default", "name": "bare", "reason": drain.REFUSE_UNMANAGED},
               {"namespace": "ci", "name": "cache", "reason": drain.REFUSE_EMPTYDIR}]
    assert drain.refusal_message("w1", refused) == (
        "cannot drain node w1, nothing was evicted: default/bare has no controller to recreate it (set force: true "
        "to delete it anyway); ci/cache has emptyDir volumes (set delete_emptydir_data: true to delete their data)")
