"""The upgrade's drain check (roles/upgrade tasks/drain_check.yml and slipway.cluster.drain_check) against a real
kube-apiserver (kube_apiserver.py), run by ansible-playbook in check mode as `upgrade.yml --check` runs it.

The cluster is the issue's: three control planes with kubeadm's taint and one worker, a Deployment's two replicas on
the worker and a PodDisruptionBudget of minAvailable 1. Nodes are plain Node objects and pods are created bound to
them (spec.nodeName), then made Running and Ready through the status subresource; no kubelet or scheduler is needed,
since the check only reads. The check must refuse that cluster with the budget named, change nothing, and let the
same plan through once a second worker exists.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run
from kube_apiserver import fixture_kube_api  # pylint: disable=unused-import  # its API server, for this module

CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


class Cluster:
    """The issue's cluster, its names unique to this test."""

    def __init__(self, kube_api):
        self.api = kube_api
        suffix = uuid.uuid4().hex[:6]
        self.namespace = f"drain32-{suffix}"
        self.control_planes = [f"cp{number}-{suffix}" for number in (1, 2, 3)]
        self.workers: list[str] = []
        for name in self.control_planes:
            self.node(name, taints=[CONTROL_PLANE_TAINT])
        self.worker(f"w1-{suffix}")
        kube_api.request("post", "/api/v1/namespaces",
                         body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        kube_api.request("post", f"/api/v1/namespaces/{self.namespace}/serviceaccounts",
                         body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        for name in ("web-a", "web-b"):
            self.pod(name, self.workers[0])
        kube_api.request("post", f"/apis/policy/v1/namespaces/{self.namespace}/poddisruptionbudgets", body={
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})

    def node(self, name: str, taints: list | None = None) -> None:
        """A Ready node with these taints only: the API server's TaintNodesByCondition admission gives a new Node
        node.kubernetes.io/not-ready:NoSchedule, which the node lifecycle controller (not running here) would lift."""
        self.api.request("post", "/api/v1/nodes", body={
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
        self.api.request("patch", f"/api/v1/nodes/{name}", body={"spec": {"taints": taints or None}},
                         content_type="application/merge-patch+json")
        self.api.request("patch", f"/api/v1/nodes/{name}/status", body={"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test"}]}},
            content_type="application/merge-patch+json")

    def worker(self, name: str) -> None:
        self.node(name)
        self.workers.append(name)

    def pod(self, name: str, node: str) -> None:
        self.api.request("post", f"/api/v1/namespaces/{self.namespace}/pods", body={
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web"}, "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c", "uid": str(uuid.uuid4()),
                "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "example.invalid/web:1"}]}})
        self.api.request("patch", f"/api/v1/namespaces/{self.namespace}/pods/{name}/status", body={"status": {
            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
            content_type="application/merge-patch+json")

    def snapshot(self) -> dict[str, str]:
        """resourceVersion of every node and pod of this test: any write changes one."""
        versions = {}
        for name in self.control_planes + self.workers:
            versions[name] = self.api.request("get", f"/api/v1/nodes/{name}")["metadata"]["resourceVersion"]
        for item in self.api.request("get", f"/api/v1/namespaces/{self.namespace}/pods")["items"]:
            versions[item["metadata"]["name"]] = item["metadata"]["resourceVersion"]
        return versions

    def remove(self) -> None:
        self.api.request("delete", f"/api/v1/namespaces/{self.namespace}")
        for name in self.control_planes + self.workers:
            self.api.request("delete", f"/api/v1/nodes/{name}")


@pytest.fixture(name="cluster")
def fixture_cluster(kube_api):
    cluster = Cluster(kube_api)
    yield cluster
    cluster.remove()


def check(kube_api, cluster: Cluster, tmp_path: Path, extra: dict | None = None, succeeds: bool = True) -> tuple[dict, str]:
    """The role's drain_check entry point after a plan like upgrade.yml's first play makes (every node to do, workers
    one at a time), in check mode; the plan's facts afterwards (none when it fails) and the run's output."""
    playbook = [{
        "name": "The upgrade's check, as upgrade.yml's first play runs it",
        "hosts": "localhost",
        "gather_facts": False,
        "tasks": [
            {"name": "The plan of the versions, without problems", "ansible.builtin.set_fact": {"upgrade_plan": {
                "problems": [], "todo_control_planes": cluster.control_planes, "todo_workers": cluster.workers,
                "worker_batch": 1}}},
            {"name": "Check the drains", "ansible.builtin.include_role": {
                "name": "slipway.cluster.upgrade", "tasks_from": "drain_check"}},
            {"name": "Save what the check decided", "ansible.builtin.copy": {
                "content": "{{ {'plan': upgrade_plan, 'drains': _upgrade_drains,"
                           " 'overridden': _upgrade_drains_overridden} | to_json }}",
                "dest": str(tmp_path / "decided.json"), "mode": "0600"},
             "check_mode": False},
        ],
    }]
    (tmp_path / "check.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    variables = dict(extra or {}, _upgrade_api={"kubeconfig": str(kube_api.kubeconfig), "host": kube_api.server})
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), "--check", "-e", f"@{tmp_path / 'vars.json'}",
                  str(tmp_path / "check.yml")], cwd=tmp_path)
    assert (result.returncode == 0) is succeeds, result.stdout[-4000:] + result.stderr[-4000:]
    if not succeeds:
        return {}, result.stdout
    return json.loads((tmp_path / "decided.json").read_text()), result.stdout


def test_the_issues_cluster_is_refused_before_any_change_and_passes_with_a_second_worker(kube_api, cluster, tmp_path):
    before = cluster.snapshot()
    decided, dummy = check(kube_api, cluster, tmp_path)
    worker = cluster.workers[0]
    problems = decided["plan"]["problems"]
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"node {worker}: PodDisruptionBudget {cluster.namespace}/web would refuse the "
                                  f"eviction of {cluster.namespace}/web-"), problems
    assert "nowhere to run" in problems[0] and "node-role.kubernetes.io/control-plane:NoSchedule" in problems[0]
    assert "add a node these pods can run on" in problems[0]
    assert problems[1].endswith(f"for them: -e upgrade_drain_blockers_ignore={cluster.namespace}/web"), problems
    assert [drain["nodes"] for drain in decided["drains"]] == [[name] for name in cluster.control_planes + [worker]]
    assert cluster.snapshot() == before, "the check wrote to a node or a pod"

    cluster.worker(f"w2-{uuid.uuid4().hex[:6]}")
    decided, dummy = check(kube_api, cluster, tmp_path)
    assert decided["plan"]["problems"] == []
    assert [len(drain["evict"]) for drain in decided["drains"]] == [0, 0, 0, 2, 2]
    assert all(not drain["pending"] for drain in decided["drains"])


def test_a_named_budget_lets_the_upgrade_go_ahead_and_the_output_says_so(kube_api, cluster, tmp_path):
    # As -e upgrade_drain_blockers_ignore=NAMESPACE/web gives it: a string.
    decided, output = check(kube_api, cluster, tmp_path, {"upgrade_drain_blockers_ignore": f"{cluster.namespace}/web"})
    assert decided["plan"]["problems"] == []
    assert [entry["budgets"] for entry in decided["overridden"]] == [[f"{cluster.namespace}/web"]]
    assert f"OVERRIDDEN by upgrade_drain_blockers_ignore={cluster.namespace}/web" in output


def test_a_budget_name_the_cluster_lacks_stops_the_check_with_what_to_write(kube_api, cluster, tmp_path):
    dummy, output = check(kube_api, cluster, tmp_path, {"upgrade_drain_blockers_ignore": ["default/no-such-budget"]},
                          succeeds=False)
    assert "ignore: default/no-such-budget names no PodDisruptionBudget of the cluster" in output


REMOVE_NODE = ROOT / "roles" / "remove_node"
# remove_node.yml's drain check (the remove_node role's plan entry point), its tasks run as written with the role's
# defaults and vars: the drain check, the problems it adds, the overrides it shows.
REMOVE_NODE_TASKS = ("Check that every drain of the removal can finish", "Add the budgets that would block a drain to the problems",
                     "Say which blocking budgets are let through")


def remove_check(kube_api, cluster: Cluster, tmp_path: Path, names: list[str], extra: list[str]) -> tuple[dict, str]:
    """remove_node.yml's drain check tasks, taken from the remove_node role's plan entry point, after facts like its
    first plays decide (every machine answers); the removal plan afterwards and the run's output."""
    tasks = [task for task in yaml.safe_load((REMOVE_NODE / "tasks" / "plan.yml").read_text())
             if task["name"] in REMOVE_NODE_TASKS]
    assert [task["name"] for task in tasks] == list(REMOVE_NODE_TASKS)
    hosts = cluster.control_planes + cluster.workers
    (tmp_path / "hosts.ini").write_text("".join(f"{name} ansible_connection=local\n" for name in hosts))
    force = any(item == "remove_node_force=true" for item in extra)
    playbook = [{
        "name": "remove_node.yml's drain check",
        "hosts": "all",
        "gather_facts": False,
        "vars_files": [str(REMOVE_NODE / "defaults" / "main.yml"), str(REMOVE_NODE / "vars" / "main.yml")],
        "tasks": [
            {"name": "What the first plays decided", "ansible.builtin.set_fact": {
                "_remove_node_names": names, "_remove_node_force": force,
                "_remove_node_plan": {"problems": [], "warnings": [], "names": names, "nodes_to_delete": names},
                "__remove_node_ping": {"ping": "pong"},
                "preflight_kubeconfig": str(kube_api.kubeconfig),
                "slipway_cluster": {"first_control_plane": cluster.control_planes[0],
                                    "nodes": {cluster.control_planes[0]: {"api_url": kube_api.server}}}}},
            *tasks,
            {"name": "Save the plan",
             "ansible.builtin.copy": {"content": "{{ _remove_node_plan | to_json }}", "dest": str(tmp_path / "plan.json"),
                                      "mode": "0600"},
             "delegate_to": "localhost", "run_once": True, "check_mode": False},
        ],
    }]
    (tmp_path / "remove.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), "--check", "-i", str(tmp_path / "hosts.ini"),
                  *[arg for item in extra for arg in ("-e", item)], str(tmp_path / "remove.yml")], cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return json.loads((tmp_path / "plan.json").read_text()), result.stdout


def test_removing_both_workers_is_refused_at_the_second_and_force_lets_it_through(kube_api, cluster, tmp_path):
    cluster.worker(f"w2-{uuid.uuid4().hex[:6]}")
    first, second = cluster.workers
    before = cluster.snapshot()
    plan, dummy = remove_check(kube_api, cluster, tmp_path, [first], [])
    assert plan["problems"] == []
    plan, dummy = remove_check(kube_api, cluster, tmp_path, [first, second], [])
    assert len(plan["problems"]) == 2, plan["problems"]
    assert plan["problems"][0].startswith(f"node {second}: PodDisruptionBudget {cluster.namespace}/web would refuse")
    assert f"{first}: removed" in plan["problems"][0]
    assert plan["problems"][1].endswith(f"-e remove_node_drain_blockers_ignore={cluster.namespace}/web")
    plan, output = remove_check(kube_api, cluster, tmp_path, [first, second], ["remove_node_force=true"])
    assert plan["problems"] == []
    assert f"OVERRIDDEN by remove_node_force: node {second}: PodDisruptionBudget {cluster.namespace}/web" in output
    plan, output = remove_check(kube_api, cluster, tmp_path, [first, second],
                                [f"remove_node_drain_blockers_ignore={cluster.namespace}/web"])
    assert plan["problems"] == []
    assert "OVERRIDDEN by remove_node_drain_blockers_ignore" in output
    assert cluster.snapshot() == before, "the check wrote to a node or a pod"


def upgrade_check(kube_api, cluster: Cluster, tmp_path: Path) -> subprocess.CompletedProcess:
    """The upgrade role's whole `check` entry point, in check mode as `upgrade.yml --check` runs it, after facts like
    the preflight reads and tasks/read.yml find on a cluster at 1.36.5 (the nodes read from the API server have no
    kubelet to report a version); the target 1.37.1."""
    hosts = cluster.control_planes + cluster.workers
    python = ROOT / ".venv" / "bin" / "python"
    (tmp_path / "hosts.ini").write_text("".join(f"{name} ansible_connection=local ansible_python_interpreter={python}\n"
                                                for name in hosts))
    (tmp_path / "kubeadm").write_text("#!/bin/sh\n")
    at = {component: "1.36.5" for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")}
    facts = {
        "slipway_cluster": {
            "kubernetes_version": "1.37.1", "control_planes": cluster.control_planes,
            "first_control_plane": cluster.control_planes[0], "endpoint": {},
            "nodes": {name: {"kubernetes": True, "api_url": kube_api.server} for name in hosts},
            "artifacts": {"binaries": [{"name": "kubeadm", "src": str(tmp_path / "kubeadm")}]}},
        "preflight_kubeconfig": str(kube_api.kubeconfig),
        "preflight_running": {"etcd": None, "nodes": {name: {
            "name": name, "ready": True, "unschedulable": False, "version": "v1.36.5",
            "control_plane": name in cluster.control_planes} for name in hosts}},
        "_upgrade_static_pod_versions": {name: at for name in cluster.control_planes},
        "_upgrade_cluster_version": "1.36.5",
        "_upgrade_certificates": {},
    }
    playbook = [{
        "name": "upgrade.yml's check",
        "hosts": "all",
        "gather_facts": False,
        "tasks": [
            {"name": "What the preflight reads and tasks/read.yml found", "ansible.builtin.set_fact": facts},
            {"name": "Plan the upgrade and stop on every problem", "ansible.builtin.import_role": {
                "name": "slipway.cluster.upgrade", "tasks_from": "check"}},
        ],
    }]
    (tmp_path / "upgrade-check.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    return run([str(ROOT / ".venv/bin/ansible-playbook"), "--check", "-i", str(tmp_path / "hosts.ini"),
                "-e", f"upgrade_staging_dir={tmp_path / 'staging'}", str(tmp_path / "upgrade-check.yml")], cwd=tmp_path)


def test_upgrade_check_mode_stops_on_the_blocker_in_its_one_list_and_shows_the_drains_once_it_can(kube_api, cluster, tmp_path):
    before = cluster.snapshot()
    refused = upgrade_check(kube_api, cluster, tmp_path)
    assert refused.returncode != 0, refused.stdout[-4000:]
    assert "The upgrade to 1.37.1 cannot start; nothing was changed:" in refused.stdout
    assert f"node {cluster.workers[0]}: PodDisruptionBudget {cluster.namespace}/web would refuse" in refused.stdout
    assert not (tmp_path / "staging").exists()
    cluster.worker(f"w2-{uuid.uuid4().hex[:6]}")
    planned = upgrade_check(kube_api, cluster, tmp_path)
    assert planned.returncode == 0, planned.stdout[-4000:] + planned.stderr[-4000:]
    assert "Upgrading from 1.36.5 to 1.37.1" in planned.stdout
    assert f"Drain {cluster.workers[0]}: evicts 2 pod(s)" in planned.stdout
    assert f"Drain {cluster.workers[1]}: evicts 2 pod(s)" in planned.stdout
    assert cluster.snapshot() == dict(before, **{cluster.workers[1]: cluster.snapshot()[cluster.workers[1]]})
