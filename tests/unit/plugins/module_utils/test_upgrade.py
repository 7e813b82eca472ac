# Unit tests of the upgrade's decisions: version skew, resume, refusals, site.yml's version check.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._lifecycle import running_cluster
from ansible_collections.slipway.cluster.plugins.module_utils._model import build_model
from ansible_collections.slipway.cluster.plugins.module_utils._upgrade import (
    image_version,
    plan_verdict,
    site_version_problems,
    static_pod_versions,
    upgrade_plan,
    upgrade_summary,
)

NAMES = ("cp1", "cp2", "cp3", "w1", "w2")
HOSTVARS = {name: {"ansible_host": f"10.0.0.{i}"} for i, name in enumerate(NAMES, 11)}
NOW = 1_800_000_000.0


def model(version="1.37.1"):
    groups = {"kube_control_plane": ["cp1", "cp2", "cp3"], "kube_node": ["w1", "w2"], "etcd": ["cp1", "cp2", "cp3"]}
    return build_model(groups, HOSTVARS, {"slipway_kubernetes_version": version})


def node(name, version="v1.36.5", ready=True):
    labels = {"node-role.kubernetes.io/control-plane": ""} if name.startswith("cp") else {}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "nodeInfo": {"kubeletVersion": version}}}


def running(versions=None, ready=(), sick=(), names=NAMES):
    versions = versions or {}
    nodes = [node(n, versions.get(n, "v1.36.5"), n not in ready) for n in names]
    members = {"members": [{"ID": 10 + i, "name": n, "clientURLs": [f"https://10.0.0.{11 + i}:2379"]}
                           for i, n in enumerate(["cp1", "cp2", "cp3"])]}
    health = [{"endpoint": f"https://10.0.0.{11 + i}:2379", "health": n not in sick} for i, n in enumerate(["cp1", "cp2", "cp3"])]
    return running_cluster(nodes, members, health)


def pods(version="1.36.5", **overrides):
    result = {cp: {c: version for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")} for cp in ("cp1", "cp2", "cp3")}
    for cp, value in overrides.items():
        result[cp] = {c: value for c in result[cp]}
    return result


def certs(expires="2027-06-01T00:00:00Z"):
    return {cp: {"certificates": [{"name": "apiserver", "expirationDate": expires, "missing": False}],
                 "certificateAuthorities": [{"name": "ca", "expirationDate": "2036-01-01T00:00:00Z"}]}
            for cp in ("cp1", "cp2", "cp3")}


def plan(**kwargs):
    args = {"static_pods": pods(), "cluster_version": "v1.36.5", "certificates": certs(), "now": NOW,
            "min_certificate_hours": 24, "kubeadm_plan": {"rc": 0, "stdout": "ok"}}
    target = kwargs.pop("target", "1.37.1")
    args.update(kwargs)
    # the model refuses a minor it does not know (1.39): the plan is checked on its own with it
    return upgrade_plan({**model(), "kubernetes_version": target}, args.pop("running", running()), **args)


def test_a_cluster_one_minor_behind_upgrades_every_node_first_control_plane_applying():
    result = plan()
    assert result["problems"] == []
    assert result["start"] == "1.36.5" and result["target"] == "1.37.1"
    assert result["todo_control_planes"] == ["cp1", "cp2", "cp3"]
    assert result["todo_workers"] == ["w1", "w2"]
    assert result["apply_on"] == "cp1"
    assert result["versions"]["w1"] == "1.36.5"


def test_at_the_target_nothing_is_left_to_do():
    result = plan(running=running({n: "v1.37.1" for n in NAMES}), static_pods=pods("1.37.1"), cluster_version="v1.37.1",
                  kubeadm_plan=None)
    assert result["problems"] == [] and result["todo"] == [] and result["apply_on"] == ""
    assert result["start"] == ""


def test_after_the_first_control_plane_the_others_run_upgrade_node():
    # interrupted after cp1: its kubelet and static pods at the target, kubeadm's configuration too
    result = plan(running=running({"cp1": "v1.37.1"}), static_pods=pods(cp1="1.37.1"), cluster_version="v1.37.1")
    assert result["problems"] == []
    assert result["todo_control_planes"] == ["cp2", "cp3"]
    assert result["apply_on"] == ""


def test_a_control_plane_whose_kubelet_is_new_but_pods_old_is_still_to_do():
    # interrupted inside kubeadm upgrade apply on cp1: the configuration not written yet
    result = plan(running=running({"cp1": "v1.37.1"}), static_pods=pods(), cluster_version="v1.36.5")
    assert result["todo_control_planes"] == ["cp1", "cp2", "cp3"]
    assert result["apply_on"] == "cp1"
    assert result["parts"]["cp1"]["kubelet"] == "1.37.1" and result["versions"]["cp1"] == "1.36.5"


def test_two_minors_at_once_is_refused():
    problems = plan(target="1.39.0")["problems"]
    assert any("one minor version at a time, so upgrade to the newest 1.37 release first, then to 1.39.0" in p
               for p in problems), problems


def test_a_downgrade_is_refused():
    problems = upgrade_plan(model("1.36.5"), running({n: "v1.37.1" for n in NAMES}), pods("1.37.1"), "v1.37.1",
                            certs(), NOW)["problems"]
    assert "node cp1 runs kubelet 1.37.1, kube-apiserver 1.37.1, kube-controller-manager 1.37.1, " \
           "kube-scheduler 1.37.1, newer than the target 1.36.5: upgrade.yml does not downgrade" in problems[0]
    assert any("ClusterConfiguration says kubernetesVersion v1.37.1" in p for p in problems)


def test_mixed_starting_versions_are_refused():
    problems = plan(running=running({"w2": "v1.36.4"}))["problems"]
    assert problems == ["the nodes start from different versions (1.36.4 on w2; 1.36.5 on cp1, cp2, cp3, w1): every "
                        "node must be at one version before an upgrade to 1.37.1"]


def test_not_ready_nodes_sick_etcd_and_every_problem_at_once():
    result = plan(running=running(ready=("w1", "cp2"), sick=("cp3",)), certificates=certs("2027-01-15T10:00:00Z"),
                  kubeadm_plan={"rc": 1, "stderr": "[upgrade] fatal\nerror: the cluster is not healthy\n"})
    text = "\n".join(result["problems"])
    assert "cp2, w1 are not Ready" in text
    assert "etcd member cp3 is not healthy" in text
    assert "host cp1: certificate apiserver expires 2027-01-15T10:00:00Z, within the 24 hours" in text
    assert "kubeadm upgrade plan 1.37.1 refuses: [upgrade] fatal / error: the cluster is not healthy" in text
    assert len(result["problems"]) == 3 + 3  # one line per control plane's certificate


def test_certificates_valid_long_enough_pass_and_external_ones_are_skipped():
    expired = {"cp1": {"certificates": [{"name": "etcd-ca", "expirationDate": "2000-01-01T00:00:00Z",
                                         "externallyManaged": True}]}}
    assert plan(certificates=expired)["problems"] == []


def test_inventory_and_cluster_must_name_the_same_nodes():
    problems = plan(running=running(names=["cp1", "cp2", "cp3", "w1", "w9"]))["problems"]
    assert problems == [
        "w2 is in the inventory but not in the cluster: add them with playbooks/scale.yml first, or take them out of "
        "the inventory",
        "the cluster has w9, which the inventory lacks: an upgrade would leave it behind; add it to the inventory, or "
        "remove them with playbooks/remove_node.yml"]


def test_plan_failure_does_not_matter_when_nothing_is_left():
    result = plan(running=running({n: "v1.37.1" for n in NAMES}), static_pods=pods("1.37.1"), cluster_version="v1.37.1",
                  kubeadm_plan={"rc": 1, "stderr": "nothing"})
    assert result["problems"] == []


@pytest.mark.parametrize("image,version", [
    ("registry.k8s.io/kube-apiserver:v1.36.5", "1.36.5"),
    ("localhost:5000/kube-apiserver:v1.37.1@sha256:00", "1.37.1"),
    ("localhost:5000/kube-apiserver", ""),
    ("registry.k8s.io/kube-apiserver:v1.37.0-rc.1", ""),
])
def test_image_version(image, version):
    assert image_version(image) == version


def test_static_pod_versions_read_the_first_container():
    pod = {"spec": {"containers": [{"image": "registry.k8s.io/kube-scheduler:v1.36.5"}]}}
    assert static_pod_versions({"kube-scheduler": pod, "kube-apiserver": {"spec": {}}}) == {
        "kube-scheduler": "1.36.5", "kube-apiserver": ""}


def test_plan_verdict_keeps_the_table_and_the_verdict():
    out = ("[preflight] Running pre-flight checks.\n[upgrade] Fetching available versions\n\n"
           "Upgrade to the latest version in the v1.36 series:\n\n"
           "COMPONENT   NODE   CURRENT   TARGET\nkube-apiserver  cp1  v1.36.5  v1.37.1\n"
           "_____________________________________________\n"
           "You can now apply the upgrade by executing the following command:\n")
    assert plan_verdict(out).splitlines() == [
        "Upgrade to the latest version in the v1.36 series:", "COMPONENT   NODE   CURRENT   TARGET",
        "kube-apiserver  cp1  v1.36.5  v1.37.1", "You can now apply the upgrade by executing the following command:"]


def test_site_refuses_a_newer_version_and_points_at_upgrade_yml():
    assert site_version_problems("1.37.1", running()) == [
        "slipway_kubernetes_version is 1.37.1 but the cluster runs older nodes (cp1, cp2, cp3, w1, w2 at 1.36.5): "
        "site.yml does not upgrade a running cluster; run ansible-playbook playbooks/upgrade.yml -i INVENTORY "
        "-e slipway_kubernetes_version=1.37.1"]


def test_site_refuses_an_older_version_and_accepts_the_running_one():
    assert "site.yml does not downgrade" in site_version_problems("1.36.5", running({"w1": "v1.37.1"}))[0]
    assert site_version_problems("1.36.5", running()) == []
    assert site_version_problems("1.36.5", running_cluster([])) == []


def test_summary_names_each_node_before_and_after():
    before = plan()
    after = running({n: "v1.37.1" for n in NAMES}, ready=("w2",))
    assert upgrade_summary(before, after) == [
        "Kubernetes 1.36.5 -> 1.37.1", "cp1: 1.36.5 -> 1.37.1, Ready", "cp2: 1.36.5 -> 1.37.1, Ready",
        "cp3: 1.36.5 -> 1.37.1, Ready", "w1: 1.36.5 -> 1.37.1, Ready", "w2: 1.36.5 -> 1.37.1, NotReady"]
    done = plan(running=after, static_pods=pods("1.37.1"), cluster_version="v1.37.1")
    assert upgrade_summary(done, after)[0] == "Kubernetes 1.37.1 -> 1.37.1 (nothing was left to upgrade)"


def test_a_node_at_the_target_left_cordoned_is_uncordoned_not_upgraded_again():
    result = running({"cp1": "v1.37.1"})
    result["nodes"]["cp1"]["unschedulable"] = True
    result["nodes"]["w1"]["unschedulable"] = True
    planned = plan(running=result, static_pods=pods(cp1="1.37.1"), cluster_version="v1.37.1")
    assert planned["uncordon"] == ["cp1"]
    assert planned["todo_control_planes"] == ["cp2", "cp3"] and "w1" in planned["todo_workers"]


@pytest.mark.parametrize("given, batch", [(1, 1), ("2", 2), (" 3 ", 3), (5, 5)])
def test_the_worker_batch_is_a_whole_number_text_counting(given, batch):
    result = plan(worker_batch=given)
    assert result["problems"] == [] and result["worker_batch"] == batch


@pytest.mark.parametrize("given", [0, -1, "two", "1.5", True, None])
def test_a_worker_batch_below_one_or_not_a_number_is_a_problem_naming_the_setting(given):
    result = plan(worker_batch=given)
    assert [p for p in result["problems"] if p.startswith("upgrade_worker_batch: ")], result["problems"]
    assert result["worker_batch"] == 1


def on_runtime(cluster, runtimes):
    for name, runtime in runtimes.items():
        cluster["nodes"][name]["runtime"] = runtime
    return cluster


def test_the_kubelets_runtime_is_read():
    item = node("w1")
    item["status"]["nodeInfo"]["containerRuntimeVersion"] = "containerd://1.6.20"
    assert running_cluster([item])["nodes"]["w1"]["runtime"] == "containerd://1.6.20"


def test_site_refuses_containerd_1_under_kubernetes_1_37_and_names_the_move():
    cluster = on_runtime(running({name: "v1.37.1" for name in NAMES}),
                         {"w1": "containerd://1.6.20~ds1", "w2": "containerd://1.6.20~ds1", "cp1": "containerd://2.3.7"})
    assert site_version_problems("1.37.1", cluster) == [
        "Kubernetes 1.37 needs containerd 2.0.0 or newer, and the containerd of w1 (1.6.20), w2 (1.6.20) is older: "
        "site.yml does not change the runtime of a running node; move them to the artifacts' containerd, drained one at "
        "a time: ansible-playbook playbooks/upgrade.yml -i INVENTORY -e slipway_kubernetes_version=1.37.1"]
    one = on_runtime(running({name: "v1.37.1" for name in NAMES}), {"w2": "containerd://1.7.28"})
    assert "the containerd of w2 (1.7.28) is older: site.yml does not change the runtime of a running node; move it " \
        in site_version_problems("1.37.1", one)[0]
    # containerd 2 everywhere, or another runtime: nothing to say
    assert site_version_problems("1.37.1", on_runtime(running({n: "v1.37.1" for n in NAMES}),
                                                      {"w1": "containerd://2.0.0", "w2": "cri-o://1.37.0"})) == []


def test_upgrade_moves_nodes_on_an_older_containerd_even_at_the_target():
    cluster = on_runtime(running({name: "v1.37.1" for name in NAMES}),
                         {name: "containerd://1.6.20" for name in NAMES})
    cluster["nodes"]["cp2"]["runtime"] = "containerd://2.3.7"
    result = plan(running=cluster, static_pods=pods("1.37.1"), cluster_version="v1.37.1", containerd="v2.3.7")
    assert result["problems"] == []
    assert result["todo_control_planes"] == ["cp1", "cp3"] and result["todo_workers"] == ["w1", "w2"]
    assert result["runtime"] == {"cp1": "1.6.20", "cp3": "1.6.20", "w1": "1.6.20", "w2": "1.6.20"}
    # the cluster configuration is at the target already: kubeadm upgrade node only
    assert result["apply_on"] == ""
    # once moved, nothing is left to do
    moved = on_runtime(running({name: "v1.37.1" for name in NAMES}), {name: "containerd://2.3.7" for name in NAMES})
    assert plan(running=moved, static_pods=pods("1.37.1"), cluster_version="v1.37.1", containerd="v2.3.7")["todo"] == []
