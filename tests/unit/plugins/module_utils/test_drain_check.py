# Unit tests of the drain check: which PodDisruptionBudgets would refuse a planned drain for good, on many shapes
# of cluster (taints, selectors, affinities, budgets in percent, unhealthy pods, a budget that selects no pod).
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils import _drain_check as dc

CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
CONTROL_PLANE_TOLERATION = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}


def node(name, taints=(), labels=None, cordoned=False):
    spec = {"taints": list(taints)}
    if cordoned:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": dict(labels or {}, **{"kubernetes.io/hostname": name})}, "spec": spec}


def pod(name, on, labels=None, ready=True, owner="ReplicaSet", phase="Running", namespace="default", **spec):
    metadata = {"name": name, "namespace": namespace, "labels": labels if labels is not None else {"app": "web"}}
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "web", "uid": "u", "controller": True}]
    return {"metadata": metadata, "spec": dict(spec, nodeName=on),
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pdb(name="web", selector=None, namespace="default", **spec):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": dict(spec, selector=selector if selector is not None else {"matchLabels": {"app": "web"}})}


def issue_cluster(workers=("w1",)):
    """The issue's cluster: 3 tainted control planes and the workers."""
    return [node(name, [CONTROL_PLANE_TAINT]) for name in ("cp1", "cp2", "cp3")] + [node(name) for name in workers]


ORDER = ["cp1", "cp2", "cp3", "w1"]


def blockers(nodes, pods, pdbs, order=None, **kwargs):
    result = dc.drain_blockers(nodes, pods, pdbs, order if order is not None else ORDER, **kwargs)
    assert result["problems"] == []
    return result


def test_the_issues_cluster_is_refused_at_the_worker_with_the_budget_named():
    result = blockers(issue_cluster(), [pod("web-a", "w1"), pod("web-b", "w1")], [pdb(minAvailable=1)])
    assert len(result["blockers"]) == 1
    blocker = result["blockers"][0]
    assert (blocker["node"], blocker["budgets"], blocker["pods"], blocker["cause"]) == (
        "w1", ["default/web"], ["default/web-b"], dc.CAUSE_PLACEMENT)
    assert "taint node-role.kubernetes.io/control-plane:NoSchedule not tolerated" in blocker["why"]
    assert "w1: being drained" in blocker["why"]
    assert "add a node" in blocker["fix"] and "maxUnavailable: 2" in blocker["fix"]
    assert blocker["message"].startswith("node w1: PodDisruptionBudget default/web would refuse the eviction of default/web-b")
    assert result["drains"][3] == {"nodes": ["w1"], "evict": ["default/web-a"], "pending": [
        {"pod": "default/web-a", "why": blocker["why"].split("nowhere to run (")[1].rstrip(")")}]}


def test_a_second_worker_lets_the_same_upgrade_through_and_both_workers_take_the_pods_in_turn():
    result = blockers(issue_cluster(("w1", "w2")), [pod("web-a", "w1"), pod("web-b", "w1")], [pdb(minAvailable=1)],
                      order=ORDER + ["w2"])
    assert result["blockers"] == []
    assert [drain["evict"] for drain in result["drains"]][3:] == [["default/web-a", "default/web-b"]] * 2
    assert all(not drain["pending"] for drain in result["drains"])


def test_removing_the_workers_one_after_another_leaves_the_second_nowhere_to_send_its_pods():
    pods = [pod("web-a", "w1"), pod("web-b", "w2")]
    upgrade = blockers(issue_cluster(("w1", "w2")), pods, [pdb(minAvailable=1)], order=["w1", "w2"])
    assert upgrade["blockers"] == []
    removal = blockers(issue_cluster(("w1", "w2")), pods, [pdb(minAvailable=1)], order=["w1", "w2"], after="removed")
    assert [(b["node"], b["cause"]) for b in removal["blockers"]] == [("w2", dc.CAUSE_PLACEMENT)]
    assert "w1: removed" in removal["blockers"][0]["why"]


def test_a_batch_cannot_send_pods_to_the_other_node_of_the_batch():
    pods = [pod("web-a", "w1"), pod("web-b", "w2")]
    alone = blockers(issue_cluster(("w1", "w2")), pods, [pdb(minAvailable=1)], order=["w1", "w2"])
    together = blockers(issue_cluster(("w1", "w2")), pods, [pdb(minAvailable=1)], order=[["w1", "w2"]])
    assert alone["blockers"] == []
    assert [b["step"] for b in together["blockers"]] == [["w1", "w2"]]
    assert "w1, w2: being drained" in together["blockers"][0]["why"]


def test_pods_that_tolerate_the_control_plane_taint_go_to_the_control_planes():
    pods = [pod("web-a", "w1", tolerations=[CONTROL_PLANE_TOLERATION]), pod("web-b", "w1", tolerations=[CONTROL_PLANE_TOLERATION])]
    assert blockers(issue_cluster(), pods, [pdb(minAvailable=1)])["blockers"] == []


@pytest.mark.parametrize("toleration, tolerated", [
    ({"operator": "Exists"}, True),
    ({"key": "dedicated", "operator": "Exists"}, True),
    ({"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}, True),
    ({"key": "dedicated", "value": "db"}, True),
    ({"key": "dedicated", "operator": "Equal", "value": "web"}, False),
    ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "other", "operator": "Exists"}, False),
])
def test_tolerations_against_a_taint(toleration, tolerated):
    nodes = [node("w1"), node("w2", [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])]
    pods = [pod("web-a", "w1", tolerations=[toleration]), pod("web-b", "w1", tolerations=[toleration])]
    result = blockers(nodes, pods, [pdb(minAvailable=1)], order=["w1"])
    assert (result["blockers"] == []) is tolerated
    if not tolerated:
        assert "w2: taint dedicated=db:NoSchedule not tolerated" in result["blockers"][0]["why"]


def test_a_prefer_no_schedule_taint_does_not_keep_pods_away():
    nodes = [node("w1"), node("w2", [{"key": "soft", "effect": "PreferNoSchedule"}])]
    assert blockers(nodes, [pod("web-a", "w1"), pod("web-b", "w1")], [pdb(minAvailable=1)], order=["w1"])["blockers"] == []


def test_a_cordoned_node_takes_no_pod_until_its_own_turn_uncordons_it():
    nodes = issue_cluster(("w1",)) + [node("w2", cordoned=True)]
    pods = [pod("web-a", "w1"), pod("web-b", "w1")]
    first_w1 = blockers(nodes, pods, [pdb(minAvailable=1)], order=["w1", "w2"])
    assert [b["node"] for b in first_w1["blockers"]] == ["w1"]
    assert "w2: cordoned" in first_w1["blockers"][0]["why"]
    # w2 drained (and uncordoned) first: then it takes w1's pods, the cordon's taint gone with the cordon.
    assert blockers(nodes, pods, [pdb(minAvailable=1)], order=["w2", "w1"])["blockers"] == []
    nodes[-1]["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert blockers(nodes, pods, [pdb(minAvailable=1)], order=["w2", "w1"])["blockers"] == []
    assert [b["node"] for b in blockers(nodes, pods, [pdb(minAvailable=1)], order=["w1", "w2"])["blockers"]] == ["w1"]


@pytest.mark.parametrize("spec, fits_w2", [
    ({"nodeSelector": {"disk": "ssd"}}, True),
    ({"nodeSelector": {"disk": "hdd"}}, False),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd", "nvme"]}]}]}}}}, True),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["ssd"]}]}]}}}}, False),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}]}}}}, True),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["8"]}]}]}}}}, False),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w2"]}]}]}}}}, True),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}}, False),
    # Only preferred affinity: no constraint.
    ({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}}]}}}, True),
])
def test_node_selectors_and_required_affinity_choose_where_replacements_may_run(spec, fits_w2):
    nodes = [node("w1", labels={"disk": "ssd", "cores": "4"}), node("w2", labels={"disk": "ssd", "cores": "16"})]
    # On w1 already, whatever its rules: only w2 is judged.
    pods = [pod("web-a", "w1", **spec), pod("web-b", "w1", **spec)]
    result = blockers(nodes, pods, [pdb(minAvailable=1)], order=["w1"])
    assert (result["blockers"] == []) is fits_w2
    if not fits_w2:
        assert result["blockers"][0]["cause"] == dc.CAUSE_PLACEMENT
        assert "w2: " in result["blockers"][0]["why"]


@pytest.mark.parametrize("spec, replicas, cause", [
    ({"minAvailable": 2}, 2, dc.CAUSE_BUDGET),
    ({"minAvailable": 1}, 1, dc.CAUSE_BUDGET),
    ({"minAvailable": 2}, 3, None),
    ({"maxUnavailable": 0}, 3, dc.CAUSE_BUDGET),
    ({"maxUnavailable": "0%"}, 3, dc.CAUSE_BUDGET),
    ({"minAvailable": "100%"}, 3, dc.CAUSE_BUDGET),
    # 50% of 3 rounds up to 2 needed: 1 eviction allowed.
    ({"minAvailable": "50%"}, 3, None),
    # 67% of 3 rounds up to 3 (2.01): none allowed.
    ({"minAvailable": "67%"}, 3, dc.CAUSE_BUDGET),
    # maxUnavailable 10% of 3 rounds up to 1 (0.3): one allowed.
    ({"maxUnavailable": "10%"}, 3, None),
    ({"maxUnavailable": 1}, 1, None),
    ({}, 2, dc.CAUSE_BUDGET),
    ({"minAvailable": "half"}, 2, dc.CAUSE_INVALID),
])
def test_budget_numbers_as_the_disruption_controller_computes_them(spec, replicas, cause):
    # Two workers: every replacement has somewhere to go, so only the budget decides.
    pods = [pod("web-%d" % number, "w1") for number in range(replicas)]
    result = blockers([node("w1"), node("w2")], pods, [pdb(**spec)], order=["w1"])
    assert [b["cause"] for b in result["blockers"]] == ([cause] if cause else [])


def test_a_budget_that_allows_nothing_says_how_to_allow_one_eviction():
    result = blockers([node("w1"), node("w2")], [pod("web-a", "w1"), pod("web-b", "w2")], [pdb(minAvailable=2)], order=["w1", "w2"])
    assert [b["node"] for b in result["blockers"]] == ["w1", "w2"]
    assert "needs 2 healthy of 2 pods and has 2: it allows no eviction at all" in result["blockers"][0]["why"]
    assert "3 or more" in result["blockers"][0]["fix"]
    max_zero = blockers([node("w1"), node("w2")], [pod("web-a", "w1")], [pdb(maxUnavailable=0)], order=["w1"])
    assert "maxUnavailable: 1" in max_zero["blockers"][0]["fix"]


def test_percentages_take_the_scale_from_the_budgets_status_when_the_controller_saw_this_generation():
    pods = [pod("web-a", "w1"), pod("web-b", "w2")]
    # 5 replicas wanted, 2 running: 50% of 5 rounds up to 3 > 2 healthy.
    seen = pdb(maxUnavailable="50%")
    seen["metadata"]["generation"] = 2
    seen["status"] = {"observedGeneration": 2, "expectedPods": 5}
    assert blockers([node("w1"), node("w2")], pods, [seen], order=["w1"])["blockers"][0]["cause"] == dc.CAUSE_UNHEALTHY
    stale = pdb(maxUnavailable="50%")
    stale["metadata"]["generation"] = 3
    stale["status"] = {"observedGeneration": 2, "expectedPods": 5}
    assert blockers([node("w1"), node("w2")], pods, [stale], order=["w1"])["blockers"] == []


def test_unhealthy_pods_count_against_the_budget_and_are_named():
    pods = [pod("web-a", "w1"), pod("web-b", "w2", ready=False), pod("web-c", "w2")]
    result = blockers([node("w1"), node("w2"), node("w3")], pods, [pdb(minAvailable=2)], order=["w1"])
    assert [(b["cause"], b["pods"]) for b in result["blockers"]] == [(dc.CAUSE_UNHEALTHY, ["default/web-a"])]
    assert "default/web-b is not Ready" in result["blockers"][0]["why"]
    assert "unhealthyPodEvictionPolicy: AlwaysAllow" in result["blockers"][0]["fix"]


@pytest.mark.parametrize("policy, blocked", [(None, True), ("IfHealthyBudget", True), ("AlwaysAllow", False)])
def test_an_unready_pod_goes_while_the_budget_is_disrupted_only_with_always_allow(policy, blocked):
    # minAvailable 2, one of two healthy: the budget is disrupted; the unready pod on w1 is the one to evict.
    pods = [pod("web-a", "w1", ready=False), pod("web-b", "w2")]
    spec = {"minAvailable": 2}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    result = blockers([node("w1"), node("w2")], pods, [pdb(**spec)], order=["w1"])
    assert bool(result["blockers"]) is blocked


def test_an_unready_pod_goes_while_the_budget_is_not_disrupted():
    pods = [pod("web-a", "w1", ready=False), pod("web-b", "w2"), pod("web-c", "w2")]
    assert blockers([node("w1"), node("w2")], pods, [pdb(minAvailable=2)], order=["w1"])["blockers"] == []


def test_a_pending_pod_is_evicted_without_asking_its_budget():
    pods = [pod("web-a", "w1", phase="Pending", ready=False)]
    assert blockers([node("w1"), node("w2")], pods, [pdb(minAvailable=1)], order=["w1"])["blockers"] == []


def test_a_budget_that_selects_no_pod_blocks_nothing():
    pods = [pod("web-a", "w1")]
    pdbs = [pdb("db", {"matchLabels": {"app": "db"}}, minAvailable=1), pdb("other-ns", namespace="shop", minAvailable=1),
            pdb("none", {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, maxUnavailable=0)]
    assert blockers([node("w1"), node("w2")], pods, pdbs, order=["w1"])["blockers"] == []


def test_daemonset_mirror_and_finished_pods_are_not_evicted_so_they_block_nothing():
    pods = [pod("proxy", "w1", owner="DaemonSet"),
            dict(pod("kube-apiserver-w1", "w1", owner=None), metadata={
                "name": "kube-apiserver-w1", "namespace": "default", "labels": {"app": "web"},
                "annotations": {"kubernetes.io/config.mirror": "x"}}),
            pod("done", "w1", phase="Succeeded")]
    result = blockers([node("w1")], pods, [pdb(maxUnavailable=0)], order=["w1"])
    assert result["blockers"] == [] and result["drains"][0]["evict"] == []


def test_a_pod_two_budgets_select_is_never_evicted():
    pods = [pod("web-a", "w1"), pod("web-b", "w2")]
    pdbs = [pdb("web", maxUnavailable=1), pdb("all", {}, maxUnavailable=1)]
    result = blockers([node("w1"), node("w2")], pods, pdbs, order=["w1"])
    assert [(b["cause"], b["budgets"], b["pods"]) for b in result["blockers"]] == [
        (dc.CAUSE_SEVERAL, ["default/all", "default/web"], ["default/web-a"])]


def test_every_blocker_is_listed_at_once():
    nodes = issue_cluster(("w1", "w2"))
    pods = [pod("web-a", "w1"), pod("web-b", "w1"),
            pod("db-0", "w1", labels={"app": "db"}, owner="StatefulSet"),
            pod("cache-a", "w2", labels={"app": "cache"}), pod("cache-b", "w2", labels={"app": "cache"}, ready=False),
            pod("pinned-a", "w2", labels={"app": "pinned"}, nodeSelector={"kubernetes.io/hostname": "w2"}),
            pod("pinned-b", "w2", labels={"app": "pinned"}, nodeSelector={"kubernetes.io/hostname": "w2"})]
    pdbs = [pdb("web", minAvailable=1), pdb("db", {"matchLabels": {"app": "db"}}, maxUnavailable=0),
            pdb("cache", {"matchLabels": {"app": "cache"}}, minAvailable="50%"),
            pdb("pinned", {"matchLabels": {"app": "pinned"}}, maxUnavailable=1)]
    result = blockers(nodes, pods, pdbs, order=ORDER + ["w2"])
    assert sorted((b["node"], b["budgets"][0], b["cause"]) for b in result["blockers"]) == [
        ("w1", "default/db", dc.CAUSE_BUDGET),
        ("w2", "default/cache", dc.CAUSE_UNHEALTHY),
        ("w2", "default/pinned", dc.CAUSE_PLACEMENT),
    ]
    pinned = next(b for b in result["blockers"] if b["budgets"] == ["default/pinned"])
    assert "w1: lacks nodeSelector label kubernetes.io/hostname=w2" in pinned["why"]


@pytest.mark.parametrize("ignore, blocking, ignored", [
    ([], ["default/web", "default/db"], []),
    (["default/db"], ["default/web"], ["default/db"]),
    (["all"], [], ["default/web", "default/db"]),
    (["true"], [], ["default/web", "default/db"]),
])
def test_ignore_lets_named_budgets_or_all_through_and_keeps_them_listed(ignore, blocking, ignored):
    pods = [pod("web-a", "w1"), pod("web-b", "w1"), pod("db-0", "w1", labels={"app": "db"})]
    pdbs = [pdb("web", minAvailable=1), pdb("db", {"matchLabels": {"app": "db"}}, maxUnavailable=0)]
    result = blockers(issue_cluster(), pods, pdbs, ignore=ignore)
    assert sorted(b["budgets"][0] for b in result["blockers"]) == sorted(blocking)
    assert sorted(b["budgets"][0] for b in result["ignored"]) == sorted(ignored)


def test_bad_input_is_named_before_anything_is_decided():
    result = dc.drain_blockers(issue_cluster(), [], [pdb(minAvailable=1)], ["w1", "w9", ["w8"]], after="gone",
                               ignore=["default/nope", "default/web"])
    assert result["blockers"] == [] and result["drains"] == []
    assert result["problems"] == [
        "after: 'gone' is not one of uncordoned, removed",
        "nodes w8, w9 to drain are not in the cluster (no Node object): name nodes that kubectl get nodes lists",
        "ignore: default/nope names no PodDisruptionBudget of the cluster; write namespace/name of a budget "
        "(kubectl get pdb -A), or all",
    ]


def test_with_force_pods_without_a_controller_are_not_recreated_but_still_ask_their_budget():
    pods = [pod("bare-a", "w1", owner=None), pod("bare-b", "w1", owner=None)]
    result = blockers([node("w1"), node("w2")], pods, [pdb(minAvailable=1)], order=["w1"], force=True)
    assert [b["cause"] for b in result["blockers"]] == [dc.CAUSE_PLACEMENT]
    assert result["drains"][0]["evict"] == ["default/bare-a"] and result["drains"][0]["pending"] == []


def test_without_force_the_drain_refuses_a_pod_without_a_controller_whatever_its_budgets():
    pods = [pod("bare", "w1", owner=None, labels={"app": "bare"}), pod("web-a", "w1"), pod("web-b", "w2")]
    result = blockers([node("w1"), node("w2")], pods, [pdb(minAvailable=1)], order=["w1"])
    assert [(b["cause"], b["budgets"], b["pods"]) for b in result["blockers"]] == [
        (dc.CAUSE_UNMANAGED, [], ["default/bare"])]
    assert result["blockers"][0]["message"].startswith("node w1: the drain would refuse default/bare (no controller)")
    named = blockers([node("w1"), node("w2")], pods, [pdb(minAvailable=1)], order=["w1"], ignore=["default/web"])
    assert [b["cause"] for b in named["blockers"]] == [dc.CAUSE_UNMANAGED]
    everything = blockers([node("w1"), node("w2")], pods, [pdb(minAvailable=1)], order=["w1"], ignore=["all"])
    assert [b["cause"] for b in everything["ignored"]] == [dc.CAUSE_UNMANAGED] and everything["blockers"] == []


def test_a_pod_without_a_budget_that_has_nowhere_to_go_is_reported_pending_but_blocks_nothing():
    result = blockers(issue_cluster(), [pod("lonely", "w1", labels={"app": "lonely"})], [pdb(minAvailable=1)])
    assert result["blockers"] == []
    assert [entry["pod"] for entry in result["drains"][3]["pending"]] == ["default/lonely"]


@pytest.mark.parametrize("value, total, scaled", [
    (1, 10, 1), ("50%", 3, 2), ("10%", 3, 1), ("0%", 5, 0), ("100%", 4, 4), ("33%", 3, 1), ("34%", 3, 2),
    ("x%", 3, None), ("3", 3, None), (True, 3, None),
])
def test_scaled_value_rounds_percentages_up(value, total, scaled):
    assert dc.scaled_value(value, total) == scaled
