"""slipway.cluster.node_drain against a real kube-apiserver (kube_apiserver.py), run by ansible-playbook.

That API server has no kubelet and no controller manager, which makes a drain's hard cases easy to set
up: nothing recreates or moves a pod, and no disruption controller ever updates a PodDisruptionBudget's
status, so an eviction of a Running pod a budget selects is refused with 429 for good, as it is in a
real cluster whose budget allows no disruption. Nodes are plain Node objects; pods are created already
bound to them (spec.nodeName), with ownerReferences written by hand, and put into phase Running through
the status subresource (the API server ignores budgets for Pending pods). Evictions and deletions use
grace_period 0, so the API server removes the pods itself instead of waiting for a kubelet.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run
from kube_apiserver import fixture_kube_api  # pylint: disable=unused-import  # its API server, for this module

MODULE = "slipway.cluster.node_drain"


def ansible_env(kube_api) -> dict[str, str]:
    return {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "K8S_AUTH_KUBECONFIG": str(kube_api.kubeconfig)}


def drain_steps(kube_api, tmp_path: Path, *steps: dict) -> list[dict]:
    """Run node_drain once per step (its arguments, ``check_mode`` among them) in one playbook, going on
    after a failure; the results in order."""
    tasks = []
    for number, step in enumerate(steps):
        args = dict(step)
        check_mode = args.pop("check_mode", False)
        tasks.append({"name": f"step {number}", MODULE: dict(args, kubeconfig=str(kube_api.kubeconfig)),
                      "check_mode": check_mode, "register": f"step{number}", "ignore_errors": True})
    tasks.append({"name": "Save the results", "ansible.builtin.copy": {
        "content": "{{ [" + ", ".join(f"step{number}" for number in range(len(steps))) + "] | to_json }}",
        "dest": str(tmp_path / "steps.json"), "mode": "0600"}})
    playbook = [{"name": "node_drain", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    path = tmp_path / "drain.yml"
    path.write_text(yaml.safe_dump(playbook, sort_keys=False))
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), str(path)], env=ansible_env(kube_api), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return json.loads((tmp_path / "steps.json").read_text())


class Scene:
    """One node and one namespace of this test's own, and the objects made on them."""

    def __init__(self, kube_api):
        self.api = kube_api
        suffix = uuid.uuid4().hex[:6]
        self.node = f"drain-{suffix}"
        self.namespace = f"drain-{suffix}"
        kube_api.request("post", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node}})
        kube_api.request("post", "/api/v1/namespaces",
                         body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        # The pods' service account, which no controller manager makes here.
        kube_api.request("post", f"/api/v1/namespaces/{self.namespace}/serviceaccounts",
                         body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})

    def node_object(self) -> dict:
        return self.api.request("get", f"/api/v1/nodes/{self.node}")

    def cordoned(self) -> bool:
        return bool(self.node_object()["spec"].get("unschedulable"))

    def pod_path(self, name: str) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods/{name}"

    def pod(self, name: str, owner_kind: str | None = "ReplicaSet", labels: dict | None = None) -> dict:
        """A Running pod bound to the node, owned (controller: true) by an object of ``owner_kind`` that
        need not exist, since no garbage collector runs."""
        metadata: dict = {"name": name, "labels": labels or {}}
        if owner_kind:
            metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner_kind, "name": f"{name}-owner",
                                            "uid": str(uuid.uuid4()), "controller": True}]
        self.api.request("post", f"/api/v1/namespaces/{self.namespace}/pods", body={
            "apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"nodeName": self.node, "containers": [{"name": "c", "image": "example.invalid/c:1"}]}})
        return self.api.request("patch", self.pod_path(name) + "/status", body={"status": {"phase": "Running"}},
                                content_type="application/merge-patch+json")

    def pdb(self, name: str, match_labels: dict) -> None:
        self.api.request("post", f"/apis/policy/v1/namespaces/{self.namespace}/poddisruptionbudgets", body={
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": match_labels}}})

    def pods(self) -> list[str]:
        listing = self.api.request("get", f"/api/v1/namespaces/{self.namespace}/pods")
        return sorted(item["metadata"]["name"] for item in listing["items"])

    def key(self, name: str) -> str:
        return f"{self.namespace}/{name}"

    def remove(self) -> None:
        for name in self.pods():
            self.api.request("delete", self.pod_path(name), body={"gracePeriodSeconds": 0})
        self.api.request("delete", f"/api/v1/nodes/{self.node}")


@pytest.fixture(name="scene")
def fixture_scene(kube_api):
    scene = Scene(kube_api)
    yield scene
    scene.remove()


def test_missing_node(kube_api, tmp_path):
    (result,) = drain_steps(kube_api, tmp_path, {"name": "no-such-node", "state": "cordoned"})
    assert result["failed"] is True and result["msg"] == "node no-such-node not found"


def test_cordon_and_uncordon(kube_api, scene, tmp_path):
    scene.pod("web-1")
    version = scene.node_object()["metadata"]["resourceVersion"]
    (check,) = drain_steps(kube_api, tmp_path, {"name": scene.node, "state": "cordoned", "check_mode": True})
    assert (check["changed"], check["cordoned"]) == (True, True), check
    assert scene.node_object()["metadata"]["resourceVersion"] == version, "check mode wrote to the node"
    steps = [{"name": scene.node, "state": state, "check_mode": check_mode}
             for state in ("cordoned", "uncordoned") for check_mode in (True, False, True, False)][1:]
    results = [check] + drain_steps(kube_api, tmp_path, *steps)
    for result in results:
        assert not result.get("failed"), result
    assert [result["changed"] for result in results] == [True, True, False, False] * 2
    assert [result["cordoned"] for result in results] == [True] * 4 + [False] * 4
    assert not scene.cordoned()
    assert "unschedulable" not in scene.node_object()["spec"], "uncordon removes the field, as kubectl does"
    assert scene.pods() == ["web-1"], "cordon and uncordon leave the pods alone"


def test_drain_skips_daemonset_pods_and_evicts_the_others(kube_api, scene, tmp_path):
    scene.pod("proxy", owner_kind="DaemonSet")
    scene.pod("web-1")
    scene.pod("db-0", owner_kind="StatefulSet")
    args = {"name": scene.node, "grace_period": 0, "timeout": 30}
    version = scene.node_object()["metadata"]["resourceVersion"]
    (check,) = drain_steps(kube_api, tmp_path, dict(args, check_mode=True))
    assert scene.node_object()["metadata"]["resourceVersion"] == version, "check mode wrote to the node"
    assert scene.pods() == ["db-0", "proxy", "web-1"], "check mode evicted"
    real, check_again, real_again = drain_steps(kube_api, tmp_path, args, dict(args, check_mode=True), args)
    for result in (check, real, check_again, real_again):
        assert not result.get("failed"), result
        assert result["skipped"] == [{"namespace": scene.namespace, "name": "proxy", "reason": "daemonset"}]
        assert result["cordoned"] is True and result["forced"] == [] and result["blocking"] == []
    for result in (check, real):
        assert result["changed"] is True and sorted(result["evicted"]) == [scene.key("db-0"), scene.key("web-1")]
    for result in (check_again, real_again):
        assert result["changed"] is False and result["evicted"] == []
    assert scene.cordoned()
    assert scene.pods() == ["proxy"]


def test_unmanaged_pod_is_refused(kube_api, scene, tmp_path):
    scene.pod("bare", owner_kind=None)
    (result,) = drain_steps(kube_api, tmp_path, {"name": scene.node, "grace_period": 0})
    assert result["failed"] is True
    assert result["msg"] == (f"cannot drain node {scene.node}, nothing was evicted: {scene.key('bare')} has no "
                             "controller to recreate it (set force: true to delete it anyway)")
    assert scene.pods() == ["bare"] and scene.cordoned()


def test_pdb_blocks_until_the_timeout_then_force_deletes(kube_api, scene, tmp_path):
    scene.pod("proxy", owner_kind="DaemonSet", labels={"app": "web"})
    scene.pod("web-1", labels={"app": "web"})
    scene.pod("api-1", labels={"app": "api"})
    scene.pdb("web", {"app": "web"})
    scene.pdb("db", {"app": "db"})
    blocked, forced = drain_steps(kube_api, tmp_path,
                                  {"name": scene.node, "grace_period": 0, "timeout": 3},
                                  {"name": scene.node, "grace_period": 0, "timeout": 3, "force": True})

    assert blocked["failed"] is True
    assert blocked["msg"] == (
        f"node {scene.node} not drained within 3 s: 1 pod still blocking: {scene.key('web-1')} "
        f"(PodDisruptionBudget {scene.key('web')}). The node stays cordoned. Raise timeout, or set force: true to "
        "delete these pods without their PodDisruptionBudgets' consent")
    (entry,) = blocked["blocking"]
    assert (entry["namespace"], entry["name"], entry["reason"], entry["pdbs"]) == (
        scene.namespace, "web-1", "eviction refused", [scene.key("web")])
    assert "disruption budget" in entry["message"], entry["message"]
    assert blocked["evicted"] == [scene.key("api-1")] and blocked["forced"] == []
    assert blocked["cordoned"] is True

    assert not forced.get("failed"), forced
    assert forced["changed"] is True and forced["forced"] == [scene.key("web-1")] and forced["evicted"] == []
    assert [item["name"] for item in forced["blocking"]] == ["web-1"]
    assert any(scene.key("web-1") in warning for warning in forced.get("warnings", [])), forced
    assert scene.pods() == ["proxy"] and scene.cordoned()
