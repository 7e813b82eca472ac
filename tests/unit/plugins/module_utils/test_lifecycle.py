# Unit tests of the day-2 decisions: what scale.yml adds, what remove_node.yml refuses or warns about.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._lifecycle import (
    removal_plan,
    running_cluster,
    scale_plan,
)
from ansible_collections.slipway.cluster.plugins.module_utils._model import build_model

HOSTVARS = {name: {"ansible_host": f"10.0.0.{i}"} for i, name in enumerate(["cp1", "cp2", "cp3", "cp4", "w1", "w2", "e1", "e2", "e3"], 11)}


def model(cps=("cp1", "cp2", "cp3"), workers=("w1", "w2"), etcd=None, **settings):
    groups = {"kube_control_plane": list(cps), "kube_node": list(workers), "etcd": list(etcd or cps)}
    return build_model(groups, HOSTVARS, settings)


def node(name, ready=True, control_plane=False, unschedulable=False):
    labels = {"node-role.kubernetes.io/control-plane": ""} if control_plane else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": unschedulable} if unschedulable else {},
        "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                  {"type": "Ready", "status": "True" if ready else "Unknown"}],
                   "nodeInfo": {"kubeletVersion": "v1.37.1"}},
    }


def members(*names, unstarted=()):
    listed = [{"ID": 1000 + i, "name": name, "peerURLs": [f"https://{HOSTVARS[name]['ansible_host']}:2380"],
               "clientURLs": [f"https://{HOSTVARS[name]['ansible_host']}:2379"]} for i, name in enumerate(names)]
    listed += [{"ID": 2000 + i, "peerURLs": [f"https://{HOSTVARS[name]['ansible_host']}:2380"]} for i, name in enumerate(unstarted)]
    return {"header": {"cluster_id": 1}, "members": listed}


def health(*names, down=()):
    return [{"endpoint": f"https://{HOSTVARS[n]['ansible_host']}:2379", "health": n not in down} for n in names]


def running(nodes, etcd_names=(), down=(), unstarted=()):
    addresses = {name: hv["ansible_host"] for name, hv in HOSTVARS.items()}
    if not etcd_names:
        return running_cluster(nodes)
    return running_cluster(nodes, members(*etcd_names, unstarted=unstarted), health(*etcd_names, down=down), addresses)


CLUSTER = [node("cp1", control_plane=True), node("cp2", control_plane=True), node("cp3", control_plane=True),
           node("w1"), node("w2")]


def test_running_cluster_reads_ready_version_roles_and_member_health():
    state = running(CLUSTER[:2] + [node("w1", ready=False, unschedulable=True)], ("cp1", "cp2"), down=("cp2",))
    assert state["nodes"]["cp1"] == {"name": "cp1", "ready": True, "unschedulable": False, "version": "v1.37.1",
                                     "runtime": "", "control_plane": True, "addresses": []}
    assert state["nodes"]["w1"]["ready"] is False and state["nodes"]["w1"]["unschedulable"] is True
    assert [(m["name"], m["healthy"], m["started"]) for m in state["etcd"]["members"]] == [
        ("cp1", True, True), ("cp2", False, True)]
    assert state["etcd"]["members"][0]["id_hex"] == "3e8"


def test_an_unstarted_member_is_named_after_the_host_of_its_peer_url():
    state = running(CLUSTER, ("cp1",), unstarted=("cp2",))
    unstarted = state["etcd"]["members"][1]
    assert unstarted["name"] == "cp2" and unstarted["started"] is False and unstarted["healthy"] is False


def test_scale_plan_lists_only_hosts_the_cluster_lacks():
    plan = scale_plan(model(cps=("cp1", "cp2", "cp3"), workers=("w1", "w2")), running([CLUSTER[0], CLUSTER[3]]))
    assert plan["new_hosts"] == ["cp2", "cp3", "w2"]
    assert plan["new_control_planes"] == ["cp2", "cp3"]
    assert plan["new_workers"] == ["w2"]
    assert plan["shared_hosts_change"] is True


def test_a_new_worker_alone_changes_no_other_node():
    plan = scale_plan(model(), running(CLUSTER[:4]))
    assert plan["new_hosts"] == ["w2"] and plan["shared_hosts_change"] is False


def test_nothing_new_is_an_empty_plan():
    plan = scale_plan(model(), running(CLUSTER))
    assert plan["new_hosts"] == [] and plan["shared_hosts_change"] is False


def test_scale_plan_adds_external_etcd_members_that_etcd_does_not_list():
    cluster_model = model(etcd=("e1", "e2", "e3"), slipway_etcd_mode="external")
    plan = scale_plan(cluster_model, running(CLUSTER, ("e1", "e2")))
    assert plan["new_etcd_members"] == ["e3"]
    assert plan["new_hosts"] == ["e3"] and plan["shared_hosts_change"] is True


def test_removing_a_worker_is_planned():
    plan = removal_plan(model(), running(CLUSTER, ("cp1", "cp2", "cp3")), ["w1"])
    assert plan["problems"] == [] and plan["warnings"] == []
    assert plan["nodes_to_delete"] == ["w1"] and plan["control_planes"] == [] and plan["etcd_members"] == []


def test_removing_a_control_plane_removes_its_member_and_warns_about_an_even_count():
    plan = removal_plan(model(), running(CLUSTER, ("cp1", "cp2", "cp3")), ["cp2"])
    assert plan["problems"] == []
    assert plan["control_planes"] == ["cp2"]
    assert plan["etcd_members"] == [{"name": "cp2", "id_hex": "3e9"}]
    assert plan["warnings"] == ["remove_node_names: leaves etcd with 2 members, an even number that tolerates no more "
                                "failures than 1: add a member back with playbooks/scale.yml"]


def test_replacing_a_control_plane_through_four_members_is_not_warned():
    four = CLUSTER[:3] + [node("cp4", control_plane=True)] + CLUSTER[3:]
    # The inventory of the step in between says it means the 4 members (the model refuses an even count otherwise).
    inventory = model(cps=("cp1", "cp2", "cp3", "cp4"), slipway_etcd_even_members_ok=True)
    plan = removal_plan(inventory, running(four, ("cp1", "cp2", "cp3", "cp4")), ["cp2"])
    assert plan["problems"] == [] and plan["warnings"] == []


@pytest.mark.parametrize("names,where", [
    (["w9"], "'w9' is neither a node of the cluster nor a host of the inventory"),
    ([], "is empty"),
])
def test_unknown_or_missing_names_are_refused(names, where):
    plan = removal_plan(model(), running(CLUSTER, ("cp1", "cp2", "cp3")), names)
    assert len(plan["problems"]) == 1 and where in plan["problems"][0]


def test_the_last_control_plane_is_refused():
    plan = removal_plan(model(cps=("cp1",)), running([CLUSTER[0], CLUSTER[3]], ("cp1",)), ["cp1"])
    assert any("would remove the last control plane (cp1)" in p for p in plan["problems"])


def test_a_removal_that_loses_quorum_is_refused():
    state = running(CLUSTER, ("cp1", "cp2", "cp3"), down=("cp3",))
    plan = removal_plan(model(), state, ["cp2"], force=True)
    assert len(plan["problems"]) == 1
    assert "would leave etcd with 2 member(s) of which 1 are healthy (cp1); 2 are needed for quorum" in plan["problems"][0]


def test_another_node_not_ready_stops_the_removal_unless_forced():
    nodes = CLUSTER[:4] + [node("w2", ready=False)]
    state = running(nodes, ("cp1", "cp2", "cp3"))
    assert any("node(s) w2 not Ready" in p for p in removal_plan(model(), state, ["w1"])["problems"])
    assert removal_plan(model(), state, ["w1"], force=True)["problems"] == []


def test_the_node_being_removed_may_be_down_and_unreachable():
    nodes = CLUSTER[:4] + [node("w2", ready=False)]
    plan = removal_plan(model(), running(nodes, ("cp1", "cp2", "cp3")), ["w2"], unreachable=["w2"])
    assert plan["problems"] == []
    assert plan["warnings"] == ["host w2: does not answer: it is removed from the cluster's side only (drain, etcd member, "
                                "Node object); reset the machine yourself if it comes back"]


def test_a_rerun_after_the_node_object_is_gone_only_cleans_up():
    plan = removal_plan(model(), running(CLUSTER[:4], ("cp1", "cp2", "cp3")), ["w2"])
    assert plan["problems"] == [] and plan["nodes_to_delete"] == [] and plan["already_removed"] == ["w2"]


def test_every_problem_is_listed_at_once():
    nodes = [CLUSTER[0], node("w1", ready=False)]
    plan = removal_plan(model(cps=("cp1",), workers=("w1",)), running(nodes, ("cp1",)), ["cp1", "nosuch"])
    assert len(plan["problems"]) == 4, plan["problems"]
