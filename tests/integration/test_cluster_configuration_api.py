"""The ClusterConfiguration modules and the kubesphere role against a real kube-apiserver (kube_apiserver.py).

Module steps run the way kubernetes.core's integration targets run them: four ways in one playbook
(check mode, real, check mode again, real again), with the object read back after each, so every
step proves what it reports, that check mode writes nothing and that a second run changes nothing.
Each module step runs once with slipway's CRD (status subresource) and once with ks-installer's
(no subresource).

The role tests run playbooks/kubesphere.yml from the controller (localhost, kubesphere_kubeconfig)
and read the cluster back: objects, statuses, which components of the component table the role walked.
"""

from __future__ import annotations

import base64
import json
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run
from kube_apiserver import fixture_kube_api  # pylint: disable=unused-import  # its API server, for this module

FIXTURES = ROOT / "tests" / "unit" / "fixtures"
KS_INSTALLER_FILE = FIXTURES / "ks-installer-v3.3.2-cluster-configuration.yaml"
KUBEKEY_FILE = FIXTURES / "kubekey-v3.4.1-cluster-configuration.yaml"
KS_INSTALLER_STATUS = FIXTURES / "ks-installer-v3.3-status.yaml"
SLIPWAY_CRD = ROOT / "roles" / "kubesphere" / "files" / "clusterconfiguration-crd.yml"
CRD_NAME = "clusterconfigurations.installer.kubesphere.io"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + CRD_NAME
CC_PATH = "/apis/installer.kubesphere.io/v1alpha1/namespaces/kubesphere-system/clusterconfigurations/ks-installer"
PLAYBOOK = ROOT / "playbooks" / "kubesphere.yml"

# ks-installer's CRD as its deploy/kubesphere-installer.yaml (KubeSphere 3.x) installs it: no
# status subresource, so ks-installer (and component_status) write status on the resource itself.
KS_INSTALLER_CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: clusterconfigurations.installer.kubesphere.io
    spec:
      group: installer.kubesphere.io
      versions:
        - name: v1alpha1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
                status:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
      scope: Namespaced
      names:
        plural: clusterconfigurations
        singular: clusterconfiguration
        kind: ClusterConfiguration
        shortNames:
          - cc
    """)


# --- helpers ---------------------------------------------------------------------------------------


@dataclass
class FourWays:
    """One step run four ways, with the object read back before and after each run."""

    before: dict | None
    check: dict
    after_check: dict | None
    real: dict
    after_real: dict | None
    check_again: dict
    real_again: dict
    after_all: dict | None

    def assert_changes_once(self) -> None:
        """Check mode predicts a change and writes nothing, the real run changes, both reruns change nothing."""
        assert not self.check.get("failed"), self.check
        assert self.check["changed"] is True, self.check
        assert _version(self.after_check) == _version(self.before), "check mode wrote to the API server"
        assert self.real["changed"] is True, self.real
        assert _version(self.after_real) != _version(self.before), "the real run did not write"
        assert self.check_again["changed"] is False, self.check_again
        assert self.real_again["changed"] is False, self.real_again
        assert _version(self.after_all) == _version(self.after_real), "the idempotent run wrote to the API server"

    def assert_no_change(self) -> None:
        for result in (self.check, self.real, self.check_again, self.real_again):
            assert not result.get("failed"), result
            assert result["changed"] is False, result
        assert _version(self.after_all) == _version(self.before)


def _version(obj: dict | None) -> str | None:
    return None if obj is None else obj["metadata"]["resourceVersion"]


def ansible_env(kube_api) -> dict[str, str]:
    return {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
            "ANSIBLE_RETRY_FILES_ENABLED": "0", "K8S_AUTH_KUBECONFIG": str(kube_api.kubeconfig)}


def four_ways(kube_api, tmp_path: Path, module: str, args: dict, read: str = CC_PATH) -> FourWays:
    """Run ``module`` with ``args`` four ways in one playbook, reading the object at REST path ``read``
    before and after each run (with uri: cheaper than a kubernetes-client module)."""
    auth = {"kubeconfig": str(kube_api.kubeconfig)}
    read_task = {"ansible.builtin.uri": {
        "url": kube_api.server + read, "ca_path": str(kube_api.ca_cert), "client_cert": str(kube_api.admin_cert),
        "client_key": str(kube_api.admin_key), "status_code": [200, 404], "return_content": True}}
    tasks = [dict(read_task, name="Read before", register="before")]
    for name, check in (("check", True), ("real", False), ("check_again", True), ("real_again", False)):
        tasks.append({"name": name, module: args, "check_mode": check, "diff": True, "register": name,
                      "ignore_errors": True})
        if name in ("check", "real"):
            tasks.append(dict(read_task, name="Read after " + name, register="after_" + name))
    tasks.append(dict(read_task, name="Read after all", register="after_all"))
    names = ["before", "check", "after_check", "real", "after_real", "check_again", "real_again", "after_all"]
    tasks.append({"name": "Save the results", "ansible.builtin.copy": {
        "content": "{{ {" + ", ".join(f"'{name}': {name}" for name in names) + "} | to_json }}",
        "dest": str(tmp_path / "results.json"), "mode": "0600"}})
    playbook = [{"name": f"{module} four ways", "hosts": "localhost", "gather_facts": False,
                 "module_defaults": {"group/slipway.cluster.k8s": auth, "group/kubernetes.core.k8s": auth},
                 "tasks": tasks}]
    path = tmp_path / "four_ways.yml"
    path.write_text(yaml.safe_dump(playbook, sort_keys=False))
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), str(path)], env=ansible_env(kube_api), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    data = json.loads((tmp_path / "results.json").read_text())

    def obj(name: str) -> dict | None:
        return data[name].get("json") if data[name]["status"] == 200 else None

    return FourWays(before=obj("before"), check=data["check"], after_check=obj("after_check"), real=data["real"],
                    after_real=obj("after_real"), check_again=data["check_again"], real_again=data["real_again"],
                    after_all=obj("after_all"))


def modules(kube_api, tmp_path: Path, *steps: tuple, check_mode: bool = False) -> list[dict]:
    """Run modules one after the other in one playbook (for reads and set-up); their results."""
    auth = {"kubeconfig": str(kube_api.kubeconfig)}
    tasks = [{"name": f"step {number}", module: args, "register": f"step{number}", "check_mode": check_mode}
             for number, (module, args) in enumerate(steps)]
    tasks.append({"name": "Save", "ansible.builtin.copy": {
        "content": "{{ [" + ", ".join(f"step{number}" for number in range(len(steps))) + "] | to_json }}",
        "dest": str(tmp_path / "steps.json"), "mode": "0600"}})
    playbook = [{"name": "steps", "hosts": "localhost", "gather_facts": False,
                 "module_defaults": {"group/slipway.cluster.k8s": auth}, "tasks": tasks}]
    path = tmp_path / "steps.yml"
    path.write_text(yaml.safe_dump(playbook, sort_keys=False))
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), str(path)], env=ansible_env(kube_api), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return json.loads((tmp_path / "steps.json").read_text())


def module_once(kube_api, tmp_path: Path, module: str, args: dict, check_mode: bool = False) -> dict:
    return modules(kube_api, tmp_path, (module, args), check_mode=check_mode)[0]


INFO = ("slipway.cluster.cluster_configuration_info", {})


def plan_of(info: dict) -> dict[str, dict]:
    return {entry["name"]: entry for entry in info["plan"]}


def wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def remove_crd(kube_api) -> None:
    """Delete the ClusterConfiguration CRD (its objects go with it) and wait until it is gone."""
    if kube_api.request("get", CRD_PATH) is not None:
        kube_api.request("delete", CRD_PATH)
    wait_for(lambda: kube_api.request("get", CRD_PATH) is None, "the CRD to be deleted", timeout=60)


def ensure_namespace(kube_api, name: str) -> None:
    if kube_api.request("get", f"/api/v1/namespaces/{name}") is None:
        kube_api.request("post", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def status_entry(obj: dict, *path: str) -> dict | None:
    value = obj.get("status") or {}
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


# --- the modules, with each CRD --------------------------------------------------------------------

CRD_FLAVOURS = {
    "slipway": {"definition": SLIPWAY_CRD.read_text(), "subresource": True},
    "ks-installer": {"definition": KS_INSTALLER_CRD, "subresource": False},
}


@pytest.fixture(name="flavour", scope="class", params=sorted(CRD_FLAVOURS))
def fixture_flavour(request, kube_api):
    """Each test class runs once per CRD: slipway's, then ks-installer's. No CRD is left behind."""
    remove_crd(kube_api)
    ensure_namespace(kube_api, "kubesphere-system")
    yield dict(CRD_FLAVOURS[request.param], name=request.param)
    remove_crd(kube_api)


class TestModules:
    """The three modules step by step on one ClusterConfiguration; the steps build on each other."""

    def test_crd_install(self, kube_api, flavour, tmp_path):
        steps = four_ways(kube_api, tmp_path, "kubernetes.core.k8s",
                          {"definition": flavour["definition"], "kubeconfig": str(kube_api.kubeconfig),
                           "wait": True, "wait_condition": {"type": "Established"}}, read=CRD_PATH)
        assert steps.before is None and steps.after_check is None
        steps.assert_changes_once()
        assert steps.after_all["spec"]["names"]["kind"] == "ClusterConfiguration"
        assert bool(steps.after_all["spec"]["versions"][0].get("subresources", {}).get("status") is not None) \
            is flavour["subresource"]

    def test_info_before_the_resource_exists(self, kube_api, flavour, tmp_path):
        info = module_once(kube_api, tmp_path, *INFO)
        assert info["crd_installed"] is True
        assert info["status_subresource"] is flavour["subresource"]
        assert info["exists"] is False and info["plan"] == [] and info["generation"] is None

    def test_create_from_ks_installer_file(self, kube_api, flavour, tmp_path):
        steps = four_ways(kube_api, tmp_path, "slipway.cluster.cluster_configuration",
                          {"definition": KS_INSTALLER_FILE.read_text()})
        assert steps.before is None and steps.after_check is None, "check mode created the resource"
        steps.assert_changes_once()
        published = yaml.safe_load(KS_INSTALLER_FILE.read_text())
        assert steps.check["created"] is True and steps.real["created"] is True
        assert steps.check["diff"]["before"] == {}
        assert steps.check["diff"]["after"]["spec"] == published["spec"]
        assert steps.after_all["spec"] == published["spec"], "the published file must apply unchanged"
        assert steps.after_all["metadata"]["labels"] == {"version": "v3.3.2"}
        assert steps.real_again["generation"] == steps.real["generation"] == 1

    def test_info_plans_the_published_file(self, kube_api, flavour, tmp_path):
        for check_mode in (True, False):
            info = module_once(kube_api, tmp_path, "slipway.cluster.cluster_configuration_info", {}, check_mode=check_mode)
            assert info["changed"] is False and info["exists"] is True
            assert info["actions"]["install"] == ["core", "monitoring"], info["actions"]
            assert info["actions"]["reapply"] == [] and info["actions"]["uninstall"] == []
            plan = plan_of(info)
            assert plan["logging"]["enabled"] is False and plan["logging"]["action"] == "none"
            # The log sidecar is switched on in the file, but its parent logging is off.
            assert plan["logging.logsidecar"]["reason"].startswith("its parent logging is off")
            assert plan["metrics_server"]["status_path"] == "status.metricsServer"
            assert all(entry["supported"] for entry in info["plan"])
        # A spec that is not stored yet (KubeKey's v3.4.1 file), planned against the stored status.
        kubekey = yaml.safe_load(KUBEKEY_FILE.read_text())
        info = module_once(kube_api, tmp_path, "slipway.cluster.cluster_configuration_info", {"spec": kubekey["spec"]})
        assert info["spec"] == kubekey["spec"]
        assert info["actions"]["install"] == ["core", "monitoring"]
        assert plan_of(info)["events.ruler"]["reason"].startswith("its parent events is off")

    def test_merge_switches_logging_on(self, kube_api, flavour, tmp_path):
        steps = four_ways(kube_api, tmp_path, "slipway.cluster.cluster_configuration",
                          {"spec": {"logging": {"enabled": True}, "events": {"enabled": True, "ruler": {"enabled": True}}}})
        steps.assert_changes_once()
        assert steps.check["created"] is False
        diff = steps.check["diff"]
        assert diff["before"]["spec"]["logging"]["enabled"] is False
        assert diff["after"]["spec"]["logging"]["enabled"] is True
        assert diff["after"]["spec"]["events"]["ruler"] == {"enabled": True}
        spec = steps.after_all["spec"]
        assert spec["logging"]["logsidecar"] == {"enabled": True, "replicas": 2}, "keys not given must be kept"
        assert spec["devops"]["jenkinsVolumeSize"] == "8Gi"
        assert steps.real["generation"] == 2 and steps.real_again["generation"] == 2
        info = module_once(kube_api, tmp_path, *INFO)
        assert info["actions"]["install"] == ["common.es", "common.fluentbit", "core", "monitoring", "events",
                                              "events.ruler", "logging", "logging.logsidecar"]

    def test_status_enabled(self, kube_api, flavour, tmp_path):
        info = module_once(kube_api, tmp_path, *INFO)
        core_hash = plan_of(info)["core"]["spec_hash"]
        steps = four_ways(kube_api, tmp_path, "slipway.cluster.component_status",
                          {"component": "core", "status": "enabled", "spec_hash": core_hash})
        steps.assert_changes_once()
        assert steps.check["previous"] is None and steps.check["diff"]["before"] == {}
        assert steps.check["status_subresource"] is flavour["subresource"]
        entry = status_entry(steps.after_all, "core")
        assert entry["status"] == "enabled" and entry["slipway"] == {"specHash": core_hash}
        assert entry["enabledTime"].endswith("Z")
        assert steps.real_again["entry"]["enabledTime"] == entry["enabledTime"], "a no-op must keep enabledTime"
        # A status write bumps generation only where status lives on the resource itself.
        generation = steps.after_all["metadata"]["generation"]
        assert (generation == 2) is flavour["subresource"], generation
        info = module_once(kube_api, tmp_path, *INFO)
        assert plan_of(info)["core"]["action"] == "none"
        assert plan_of(info)["core"]["recorded_by"] == "slipway"

    def test_status_failed_then_retried(self, kube_api, flavour, tmp_path):
        steps = four_ways(kube_api, tmp_path, "slipway.cluster.component_status",
                          {"component": "logging", "status": "failed", "reason": "the log store did not start"})
        steps.assert_changes_once()
        entry = status_entry(steps.after_all, "logging")
        assert entry["status"] == "failed" and entry["slipway"]["reason"] == "the log store did not start"
        assert steps.real_again["entry"]["enabledTime"] == entry["enabledTime"]
        info = module_once(kube_api, tmp_path, *INFO)
        logging = plan_of(info)["logging"]
        assert logging["action"] == "install" and "the log store did not start" in logging["reason"]
        # A retry that works: enabled, with a new enabledTime.
        time.sleep(1.1)
        steps = four_ways(kube_api, tmp_path, "slipway.cluster.component_status",
                          {"component": "logging", "status": "enabled", "spec_hash": logging["spec_hash"]})
        steps.assert_changes_once()
        assert steps.check["diff"]["before"]["status"] == "failed"
        enabled = status_entry(steps.after_all, "logging")
        assert enabled["status"] == "enabled" and "reason" not in enabled["slipway"]
        assert enabled["enabledTime"] > entry["enabledTime"]

    def test_nested_status_keeps_its_parent(self, kube_api, flavour, tmp_path):
        kube_api.request("patch", CC_PATH + ("/status" if flavour["subresource"] else ""),
                         body={"status": {"events": {"status": "enabled", "enabledTime": "2024-05-01T10:00:00Z"}}},
                         content_type="application/merge-patch+json")
        steps = four_ways(kube_api, tmp_path, "slipway.cluster.component_status",
                          {"component": "events.ruler", "status": "enabled"})
        steps.assert_changes_once()
        assert steps.real["status_path"] == "status.events.ruler"
        events = status_entry(steps.after_all, "events")
        assert events["status"] == "enabled" and events["ruler"]["status"] == "enabled"

    def test_switched_off_then_disabled(self, kube_api, flavour, tmp_path):
        info = modules(kube_api, tmp_path, ("slipway.cluster.cluster_configuration", {"spec": {"logging": {"enabled": False}}}),
                       INFO)[-1]
        assert info["actions"]["uninstall"] == ["logging"]
        time.sleep(1.1)
        before = kube_api.request("get", CC_PATH)
        steps = four_ways(kube_api, tmp_path, "slipway.cluster.component_status", {"component": "logging", "status": "disabled"})
        steps.assert_changes_once()
        entry = status_entry(steps.after_all, "logging")
        assert entry["status"] == "disabled" and "specHash" not in entry.get("slipway", {})
        assert entry["enabledTime"] != status_entry(before, "logging")["enabledTime"]
        assert steps.real_again["entry"]["enabledTime"] == entry["enabledTime"]
        assert steps.real["spec_hash"] is None
        info = module_once(kube_api, tmp_path, *INFO)
        assert plan_of(info)["logging"]["action"] == "none"
        assert "already removed" in plan_of(info)["logging"]["reason"]

    def test_reapply_after_a_spec_edit(self, kube_api, flavour, tmp_path):
        info = modules(kube_api, tmp_path,
                       ("slipway.cluster.component_status", {"component": "monitoring", "status": "enabled"}),
                       ("slipway.cluster.cluster_configuration", {"spec": {"monitoring": {"node_exporter": {"port": 9101}}}}),
                       INFO)[-1]
        assert info["actions"]["reapply"] == ["monitoring"], info["actions"]
        assert plan_of(info)["core"]["action"] == "none", "an edit of monitoring's section must not reapply core"

    def test_status_written_by_ks_installer_is_understood(self, kube_api, flavour, tmp_path):
        status = yaml.safe_load(KS_INSTALLER_STATUS.read_text())
        # The status ks-installer leaves, written as ks-installer writes it: merge patches of status
        # (through /status where the CRD has that subresource).
        path = CC_PATH + ("/status" if flavour["subresource"] else "")
        for patch in ({"status": None}, {"status": status}):
            kube_api.request("patch", path, body=patch, content_type="application/merge-patch+json")
        info = module_once(kube_api, tmp_path, *INFO)
        plan = plan_of(info)
        assert plan["metrics_server"]["recorded_by"] == "ks-installer"
        assert plan["metrics_server"]["action"] == "uninstall", "metrics_server is off in spec"
        assert plan["common.es"]["recorded_by"] == "ks-installer" and plan["common.es"]["action"] == "none"
        assert plan["events.ruler"]["recorded_by"] == "ks-installer"
        # Recording the spec hash over ks-installer's entry keeps its other keys (core's version).
        steps = four_ways(kube_api, tmp_path, "slipway.cluster.component_status", {"component": "core", "status": "enabled"})
        steps.assert_changes_once()
        core = status_entry(steps.after_all, "core")
        assert core["version"] == "v3.3.2" and core["slipway"]["specHash"]
        assert steps.after_all["status"]["clusterId"] == status["clusterId"]


# --- the kubesphere role, through playbooks/kubesphere.yml -------------------------------------------

COMPONENT_TASK_FILE = "/roles/kubesphere/tasks/component.yml"
MORE_COMPONENTS = {
    "local_registry": "registry.lab.internal:5000",
    "alerting": {"enabled": True},
    "auditing": {"enabled": True},
    "events": {"enabled": True, "ruler": {"enabled": True, "replicas": 2}},
    "logging": {"enabled": True, "logsidecar": {"enabled": True, "replicas": 2}},
    "common": {"opensearch": {"enabled": True}},
}


@dataclass
class RoleRun:
    returncode: int
    output: dict
    stderr: str

    def tasks(self) -> list[dict]:
        return [task for play in self.output["plays"] for task in play["tasks"]]

    def components_run(self) -> set[str]:
        """The components whose objects the role applied or deleted, walking their entry of the component table.

        main.yml includes component.yml once per plan entry, in the order of the include's items; each inclusion
        starts with the task that stops an unsupported component."""
        included, ran, current = [], set(), -1
        for task in self.tasks():
            result = task["hosts"].get("localhost", {})
            name = task["task"]["name"]
            if name.endswith("Install, reapply or remove each component the plan names"):
                included += [item["_kubesphere_entry"]["name"] for item in result.get("results", [])
                             if not item.get("skipped")]
            elif COMPONENT_TASK_FILE not in (task["task"].get("path") or ""):
                continue
            elif name.endswith("Stop when slipway cannot install the component"):
                current += 1
            elif name.endswith(("Apply the component's objects", "Delete the component's objects")) \
                    and not result.get("skipped"):
                ran.add(included[current])
        assert current == len(included) - 1, (included, current)
        return ran

    def summary(self) -> list[str]:
        for task in self.tasks():
            if task["task"]["name"].endswith("Show the components and their states"):
                return task["hosts"]["localhost"]["msg"]
        return []

    def stats(self) -> dict:
        return self.output["stats"]["localhost"]


def run_role(kube_api, tmp_path: Path, configuration, check: bool = False, **extra) -> RoleRun:
    """playbooks/kubesphere.yml from the controller against the loopback API server; nothing is ever pulled."""
    variables = {"kubesphere_kubeconfig": str(kube_api.kubeconfig), "kubesphere_image_pull_policy": "Never",
                 # No kubelet here: Deployments never get pods, so waiting for them would time out.
                 "kubesphere_wait": False, "kubesphere_cluster_configuration": configuration, **extra}
    path = tmp_path / "vars.yml"
    path.write_text(yaml.safe_dump(variables))
    args = [str(ROOT / ".venv/bin/ansible-playbook"), str(PLAYBOOK), "-e", f"@{path}"] + (["--check"] if check else [])
    result = run(args, env=ansible_env(kube_api), cwd=tmp_path, timeout=900)
    try:
        output = json.loads(result.stdout)
    except ValueError:
        raise AssertionError(result.stdout[-4000:] + result.stderr[-4000:]) from None
    return RoleRun(result.returncode, output, result.stderr)


def cc_status(kube_api) -> dict:
    return kube_api.request("get", CC_PATH).get("status") or {}


def get(kube_api, path: str) -> dict | None:
    return kube_api.request("get", path)


def deployment(namespace: str, name: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"


def container_image(obj: dict) -> str:
    return obj["spec"]["template"]["spec"]["containers"][0]["image"]


@pytest.mark.parametrize("extra,expected", [
    ([], "cp1"),
    (["-e", "kubesphere_kubeconfig=/etc/kubernetes/admin.conf"], "cp1"),
    (["-e", "kubesphere_kubeconfig=/root/.kube/config"], "localhost"),
])
def test_playbook_runs_on_the_first_control_plane_unless_given_a_kubeconfig(tmp_path, extra, expected):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {
        "kube_control_plane": {"hosts": {"cp1": {"ansible_host": "127.0.0.2"}, "cp2": {"ansible_host": "127.0.0.3"}}}}}}))
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), "--list-hosts", "-i", str(inventory), str(PLAYBOOK), *extra])
    assert result.returncode == 0, result.stderr
    # The last play installs; the first (playbooks/inventory.yml) checks the inventory on localhost.
    assert result.stdout.split("hosts (1):")[-1].split() == [expected]


@pytest.fixture(name="fresh_cluster", scope="class")
def fixture_fresh_cluster(kube_api):
    """The role tests start without the ClusterConfiguration CRD (the module tests removed theirs)."""
    remove_crd(kube_api)
    return kube_api


class TestRole:
    """playbooks/kubesphere.yml run after run on one cluster; each test builds on the one before.

    Reapplying only a section that changed, removing a component switched off, recording a failure with the API
    server's reason while the other components go on, and retrying it on the next run are checked against a real
    cluster by the kubesphere scenario (molecule/kubesphere/verify.yml), through this same playbook."""

    def test_first_run_installs_the_crd_core_and_monitoring(self, fresh_cluster, tmp_path):
        kube_api = fresh_cluster
        result = run_role(kube_api, tmp_path, str(KS_INSTALLER_FILE))
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        crd = get(kube_api, CRD_PATH)
        assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}, "slipway's CRD when none was there"
        stored = get(kube_api, CC_PATH)
        assert stored["spec"] == yaml.safe_load(KS_INSTALLER_FILE.read_text())["spec"]
        status = stored["status"]
        assert status["core"]["status"] == "enabled" and status["monitoring"]["status"] == "enabled"
        assert {key for key, value in status.items() if isinstance(value, dict)} == {"core", "monitoring"}
        assert result.components_run() == {"core", "monitoring"}
        for name in ("ks-apiserver", "ks-console", "ks-controller-manager"):
            obj = get(kube_api, deployment("kubesphere-system", name))
            assert obj is not None, name
            container = obj["spec"]["template"]["spec"]["containers"][0]
            assert container["image"] == f"kubesphere/{name}:v3.4.1" and container["imagePullPolicy"] == "Never"
            assert obj["spec"]["template"]["spec"]["serviceAccountName"] == "kubesphere"
            assert get(kube_api, f"/api/v1/namespaces/kubesphere-system/services/{name}") is not None
        console = get(kube_api, "/api/v1/namespaces/kubesphere-system/services/ks-console")
        assert console["spec"]["type"] == "NodePort" and console["spec"]["ports"][0]["nodePort"] == 30880
        assert get(kube_api, "/api/v1/namespaces/kubesphere-controls-system") is not None
        binding = get(kube_api, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubesphere")
        assert binding["roleRef"]["name"] == "cluster-admin"
        config = yaml.safe_load(get(kube_api, "/api/v1/namespaces/kubesphere-system/configmaps/kubesphere-config")
                                ["data"]["kubesphere.yaml"])
        # The JWT secret is in its Secret, which ks-apiserver reads through its environment; none in the ConfigMap.
        assert config["authentication"]["jwtSecret"] == ""
        jwt = get(kube_api, "/api/v1/namespaces/kubesphere-system/secrets/kubesphere-jwt-secret")
        assert len(base64.b64decode(jwt["data"]["jwtSecret"])) == 32
        console_tls = get(kube_api, "/api/v1/namespaces/kubesphere-system/secrets/ks-console-tls")
        assert console_tls["type"] == "kubernetes.io/tls" and set(console_tls["data"]) == {"ca.crt", "tls.crt", "tls.key"}
        assert [(port["name"], port["port"]) for port in console["spec"]["ports"]] == [("https", 443)]
        assert config["monitoring"]["endpoint"] == "http://prometheus-operated.kubesphere-monitoring-system.svc:9090"
        assert "logging" not in config
        webhook_cert = get(kube_api, "/api/v1/namespaces/kubesphere-system/secrets/ks-controller-manager-webhook-cert")
        assert set(webhook_cert["data"]) == {"ca.crt", "tls.crt", "tls.key"}
        for path in ("/apis/monitoring.coreos.com/v1/namespaces/kubesphere-monitoring-system/prometheuses/k8s",
                     "/apis/apps/v1/namespaces/kubesphere-monitoring-system/daemonsets/node-exporter",
                     deployment("kubesphere-monitoring-system", "prometheus-operator"),
                     deployment("kubesphere-monitoring-system", "kube-state-metrics")):
            assert get(kube_api, path) is not None, path

    def test_rerun_runs_no_component_task(self, fresh_cluster, tmp_path):
        kube_api = fresh_cluster
        before = get(kube_api, CC_PATH)
        jwt = get(kube_api, "/api/v1/namespaces/kubesphere-system/configmaps/kubesphere-config")["data"]
        for check in (True, False):
            result = run_role(kube_api, tmp_path, str(KS_INSTALLER_FILE), check=check)
            assert result.returncode == 0, result.summary() or result.stderr[-3000:]
            assert result.components_run() == set()
            assert result.stats()["changed"] == 0, [t["task"]["name"] for t in result.tasks()
                                                    if t["hosts"]["localhost"].get("changed")]
        after = get(kube_api, CC_PATH)
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert get(kube_api, "/api/v1/namespaces/kubesphere-system/configmaps/kubesphere-config")["data"] == jwt

    def test_an_install_an_earlier_version_left_open_moves_on_the_next_run(self, fresh_cluster, tmp_path):
        """What an earlier version left: the JWT secret in kubesphere-config and no Secret of it, the console's Service
        on plain HTTP. The next run applies core again and moves the same secret to its Secret, keeps admin's password
        (as a user changed it) and its Secret; the run after changes nothing."""
        kube_api = fresh_cluster
        system = "/api/v1/namespaces/kubesphere-system"
        config = get(kube_api, f"{system}/configmaps/kubesphere-config")
        content = yaml.safe_load(config["data"]["kubesphere.yaml"])
        content["authentication"]["jwtSecret"] = "legacy-jwt-secret-of-an-earlier-version"
        config["data"]["kubesphere.yaml"] = yaml.safe_dump(content)
        kube_api.request("put", f"{system}/configmaps/kubesphere-config", body=config)
        kube_api.request("delete", f"{system}/secrets/kubesphere-jwt-secret")
        console = get(kube_api, f"{system}/services/ks-console")
        console["spec"]["ports"] = [{"name": "nginx", "port": 80, "protocol": "TCP", "targetPort": 8000, "nodePort": 30880}]
        kube_api.request("put", f"{system}/services/ks-console", body=console)
        user = get(kube_api, "/apis/iam.kubesphere.io/v1alpha2/users/admin")
        # As ks-controller-manager stores a password changed in the console: bcrypt, 56 characters after $2a$.
        user["spec"]["password"] = "$2a$10$" + "ChangedInTheConsoleByItsUser".ljust(53, "0")
        kube_api.request("put", "/apis/iam.kubesphere.io/v1alpha2/users/admin", body=user)
        admin_secret = get(kube_api, f"{system}/secrets/kubesphere-admin")["data"]

        result = run_role(kube_api, tmp_path, str(KS_INSTALLER_FILE))
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        assert result.components_run() == {"core"}
        jwt = get(kube_api, f"{system}/secrets/kubesphere-jwt-secret")
        assert base64.b64decode(jwt["data"]["jwtSecret"]).decode() == "legacy-jwt-secret-of-an-earlier-version"
        content = yaml.safe_load(get(kube_api, f"{system}/configmaps/kubesphere-config")["data"]["kubesphere.yaml"])
        assert content["authentication"]["jwtSecret"] == ""
        apiserver = get(kube_api, deployment("kubesphere-system", "ks-apiserver"))["spec"]["template"]["spec"]
        assert {"name": "KUBESPHERE_AUTHENTICATION_JWTSECRET", "valueFrom": {"secretKeyRef": {
            "name": "kubesphere-jwt-secret", "key": "jwtSecret"}}} in apiserver["containers"][0]["env"]
        ports = get(kube_api, f"{system}/services/ks-console")["spec"]["ports"]
        assert [(port["name"], port["port"], port["nodePort"]) for port in ports] == [("https", 443, 30880)]
        assert get(kube_api, "/apis/iam.kubesphere.io/v1alpha2/users/admin")["spec"]["password"] == user["spec"]["password"]
        assert get(kube_api, f"{system}/secrets/kubesphere-admin")["data"] == admin_secret
        assert not [obj["metadata"]["name"] for obj in get(kube_api, "/api/v1/configmaps")["items"]
                    if "legacy-jwt-secret-of-an-earlier-version" in json.dumps(obj.get("data", {}))], "in no ConfigMap"

        for check in (True, False):
            again = run_role(kube_api, tmp_path, str(KS_INSTALLER_FILE), check=check)
            assert again.returncode == 0, again.summary() or again.stderr[-3000:]
            assert again.components_run() == set()
            assert again.stats()["changed"] == 0, [t["task"]["name"] for t in again.tasks()
                                                   if t["hosts"]["localhost"].get("changed")]

    def test_reapply_brings_back_what_was_deleted_by_hand(self, fresh_cluster, tmp_path):
        """kubesphere_reapply (slipway-operator's resync): every enabled component applied again, drift repaired."""
        kube_api = fresh_cluster
        console = deployment("kubesphere-system", "ks-console")
        kube_api.request("delete", console)
        wait_for(lambda: get(kube_api, console) is None, "ks-console to be deleted")
        result = run_role(kube_api, tmp_path, str(KS_INSTALLER_FILE), kubesphere_reapply=True)
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        assert result.components_run() == {"core", "monitoring"}
        assert get(kube_api, console) is not None
        assert cc_status(kube_api)["core"]["status"] == "enabled"
        again = run_role(kube_api, tmp_path, str(KS_INSTALLER_FILE), kubesphere_reapply=True)
        assert again.returncode == 0, again.summary() or again.stderr[-3000:]
        assert again.stats()["changed"] == 0, [t["task"]["name"] for t in again.tasks() if t["hosts"]["localhost"].get("changed")]

    def test_more_components_from_a_local_registry(self, fresh_cluster, tmp_path):
        kube_api = fresh_cluster
        before = cc_status(kube_api)
        result = run_role(kube_api, tmp_path, {"spec": MORE_COMPONENTS})
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        # local_registry counts in every component's section: monitoring, installed before, is reapplied with
        # the new registry along with the components switched on now.
        assert result.components_run() == {"core", "monitoring", "common.opensearch", "common.fluentbit", "alerting",
                                           "auditing", "events", "events.ruler", "logging", "logging.logsidecar"}
        status = cc_status(kube_api)
        for key in ("monitoring", "opensearch", "fluentbit", "alerting", "auditing", "events", "logging"):
            assert status[key]["status"] == "enabled", key
        assert status["events"]["ruler"]["status"] == "enabled"
        assert status["logging"]["logsidecar"]["status"] == "enabled"
        assert status["monitoring"]["slipway"]["specHash"] != before["monitoring"]["slipway"]["specHash"]
        registry = "registry.lab.internal:5000/"
        operator = get(kube_api, deployment("kubesphere-monitoring-system", "prometheus-operator"))
        assert container_image(operator) == registry + "kubesphere/prometheus-operator:v0.55.1"
        assert container_image(get(kube_api, deployment("kubesphere-system", "ks-apiserver"))) == \
            registry + "kubesphere/ks-apiserver:v3.4.1"
        exporter = get(kube_api, deployment("kubesphere-logging-system", "kube-events-exporter"))
        assert container_image(exporter) == registry + "kubesphere/kube-events-exporter:v0.6.0"
        ruler = get(kube_api, deployment("kubesphere-logging-system", "kube-events-ruler"))
        assert ruler["spec"]["replicas"] == 2
        master = get(kube_api, "/apis/apps/v1/namespaces/kubesphere-logging-system/statefulsets/opensearch-cluster-master")
        assert master["spec"]["template"]["spec"]["initContainers"][0]["image"] == registry + "library/busybox:1.31.1"
        output = get(kube_api, "/apis/fluentbit.fluent.io/v1alpha2/clusteroutputs/log-store-logging")
        assert output["spec"]["opensearch"]["host"] == "opensearch-cluster-data.kubesphere-logging-system.svc"
        thanos = get(kube_api, "/apis/monitoring.coreos.com/v1/namespaces/kubesphere-monitoring-system/thanosrulers/kubesphere")
        assert thanos["spec"]["replicas"] == 1
        webhook = get(kube_api, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                                "logsidecar-injector-admission-mutate")
        assert webhook["webhooks"][0]["clientConfig"]["caBundle"] and webhook["webhooks"][0]["failurePolicy"] == "Ignore"
        # ks-apiserver's configuration now points at the log store, and ks-apiserver restarts to read it.
        config = yaml.safe_load(get(kube_api, "/api/v1/namespaces/kubesphere-system/configmaps/kubesphere-config")
                                ["data"]["kubesphere.yaml"])
        assert config["logging"]["host"] == "https://opensearch-cluster-data.kubesphere-logging-system.svc:9200"
        assert config["events"]["indexPrefix"] == "ks-whizard-events"
        annotations = get(kube_api, deployment("kubesphere-system", "ks-apiserver"))["spec"]["template"]["metadata"]["annotations"]
        assert annotations["kubesphere.io/config-hash"]

    def test_ks_installer_crd_and_status_are_kept(self, fresh_cluster, tmp_path):
        kube_api = fresh_cluster
        remove_crd(kube_api)
        kube_api.request("post", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=yaml.safe_load(KS_INSTALLER_CRD))
        wait_for(lambda: any(condition["type"] == "Established" and condition["status"] == "True"
                             for condition in ((get(kube_api, CRD_PATH) or {}).get("status") or {}).get("conditions") or []),
                 "the CRD to be established")
        crd_version = get(kube_api, CRD_PATH)["metadata"]["resourceVersion"]
        # What ks-installer leaves: its ClusterConfiguration, core installed and recorded by it.
        definition = yaml.safe_load(KS_INSTALLER_FILE.read_text())
        definition["status"] = {"core": {"status": "enabled", "enabledTime": "2023-06-21T12:20:31CST", "version": "v3.3.2"}}
        ensure_namespace(kube_api, "kubesphere-system")
        kube_api.request("post", CC_PATH.rsplit("/", 1)[0], body=definition)
        result = run_role(kube_api, tmp_path, str(KS_INSTALLER_FILE))
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        assert get(kube_api, CRD_PATH)["metadata"]["resourceVersion"] == crd_version, "ks-installer's CRD must stay as is"
        assert result.components_run() == {"monitoring"}, "core, enabled by ks-installer, is taken as current"
        status = cc_status(kube_api)
        assert status["core"] == definition["status"]["core"]
        assert status["monitoring"]["status"] == "enabled" and status["monitoring"]["slipway"]["specHash"]

    def test_readiness_checks_of_the_component_table(self, fresh_cluster, tmp_path):
        """A readiness check of the component table (its ready list) holds a component back until it passes: here
        alerting's ThanosRuler must report the condition Available, which no operator sets in this cluster."""
        kube_api = fresh_cluster
        table = yaml.safe_load((ROOT / "roles" / "kubesphere" / "vars" / "main.yml").read_text())["_kubesphere_components"]
        table["alerting"]["ready"] = [{"api_version": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
                                       "namespace": "kubesphere-monitoring-system", "name": "kubesphere",
                                       "condition": {"type": "Available", "status": "True"}}]
        # Only alerting acts (core and monitoring are current), so no other component waits for pods.
        settings = {"_kubesphere_components": table, "kubesphere_wait": True, "kubesphere_wait_timeout": 5}
        switch_on = {"spec": {"alerting": {"enabled": True}}}
        result = run_role(kube_api, tmp_path, switch_on, **settings)
        assert result.returncode != 0, "a component that is not ready fails the run"
        assert result.components_run() == {"alerting"}
        alerting = cc_status(kube_api)["alerting"]
        assert alerting["status"] == "failed"
        assert alerting["slipway"]["reason"].startswith("Wait until the component is ready: "), alerting
        ruler = "/apis/monitoring.coreos.com/v1/namespaces/kubesphere-monitoring-system/thanosrulers/kubesphere"
        assert get(kube_api, ruler) is not None, "its objects were applied before the wait"
        # What prometheus-operator would report once the Thanos Ruler runs (the CRD has no status subresource).
        kube_api.request("patch", ruler, content_type="application/merge-patch+json",
                         body={"status": {"conditions": [{"type": "Available", "status": "True"}]}})
        result = run_role(kube_api, tmp_path, {}, **settings)
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        assert result.components_run() == {"alerting"}, "the failed component is retried"
        assert cc_status(kube_api)["alerting"]["status"] == "enabled"

    def test_wait_names_the_components_to_wait_for(self, fresh_cluster, tmp_path):
        """kubesphere_wait as a list waits only for the components it names (a lab waits for those whose images it
        has): alerting's readiness check, which nothing here makes true, holds it back only when the list names it."""
        kube_api = fresh_cluster
        table = yaml.safe_load((ROOT / "roles" / "kubesphere" / "vars" / "main.yml").read_text())["_kubesphere_components"]
        table["alerting"]["ready"] = [{"api_version": "monitoring.coreos.com/v1", "kind": "ThanosRuler",
                                       "namespace": "kubesphere-monitoring-system", "name": "kubesphere",
                                       "condition": {"type": "Degraded", "status": "True"}}]
        settings = {"_kubesphere_components": table, "kubesphere_wait_timeout": 5}
        result = run_role(kube_api, tmp_path, {"spec": {"alerting": {"thanosruler": {"replicas": 2}}}},
                          kubesphere_wait=["monitoring"], **settings)
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        assert result.components_run() == {"alerting"}
        assert cc_status(kube_api)["alerting"]["status"] == "enabled"
        result = run_role(kube_api, tmp_path, {"spec": {"alerting": {"thanosruler": {"replicas": 1}}}},
                          kubesphere_wait=["alerting"], **settings)
        assert result.returncode != 0, "alerting is waited for, and its check does not pass"
        assert result.components_run() == {"alerting"}
        assert cc_status(kube_api)["alerting"]["status"] == "failed"
        result = run_role(kube_api, tmp_path, {}, kubesphere_wait=False, **settings)
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        assert cc_status(kube_api)["alerting"]["status"] == "enabled", "retried, and not waited for"

    def test_a_refused_setting_fails_only_its_component(self, fresh_cluster, tmp_path):
        """A refuse rule of the component table: monitoring fails, naming the setting, until it is switched off."""
        kube_api = fresh_cluster
        result = run_role(kube_api, tmp_path, {"spec": {"etcd": {"monitoring": True}}},
                          kubesphere_fail_on_component_failure=False)
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        assert result.components_run() == set(), "refused before any object was applied"
        status = cc_status(kube_api)
        assert status["monitoring"]["status"] == "failed"
        assert status["monitoring"]["slipway"]["reason"] == "spec.etcd.monitoring is on: etcd monitoring is not supported yet"
        assert status["alerting"]["status"] == "enabled" and status["core"]["status"] == "enabled"
        result = run_role(kube_api, tmp_path, {"spec": {"etcd": {"monitoring": False}}})
        assert result.returncode == 0, result.summary() or result.stderr[-3000:]
        assert result.components_run() == {"monitoring"}
        assert cc_status(kube_api)["monitoring"]["status"] == "enabled"
