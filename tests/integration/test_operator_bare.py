"""slipway-operator on a cluster made without KubeSphere (docs/kubesphere.md, "Operator mode"), against a real
kube-apiserver (kube_apiserver.py) that holds nothing of KubeSphere: no CRD of its groups, no namespace, no User.

Two Nodes (objects only: no kubelet here) report the images of a cluster made from a bundle without KubeSphere
(Kubernetes' own, flannel, metrics-server). playbooks/operator.yml deploys the operator with the settings of such a
cluster where pods pull nothing and every component must become ready (kubesphere_image_pull_policy Never,
kubesphere_wait true). Then, each step on the one ClusterConfiguration:

1. playbooks/kubesphere.yml from the controller refuses core and monitoring before any of their objects: the nodes
   lack their images, and the reason says which and what gives them.
2. The operator, as in its pod (the settings of its ConfigMap, a token of its ServiceAccount), refuses them the same
   way for ks-installer's own cluster-configuration.yaml, with an Event for each.
3. The operator again, with the settings of a cluster whose pods are not waited for (no kubelet here ever runs one),
   installs from nothing every supported component the ClusterConfiguration switches on, through the RBAC the
   playbook gave it (so the first install's creates, the User admin's among them, are within it), and records each
   enabled; then the log store moved to OpenSearch.

The RBAC names every object it lets the operator write: no wildcard.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml
from slipway_operator import collection

from conftest import ROOT, run
from kube_apiserver import fixture_kube_api, free_port, stop_processes  # pylint: disable=unused-import  # its API server, for this module
from test_cluster_configuration_api import CC_PATH, KS_INSTALLER_FILE, ansible_env, run_role, wait_for
from test_operator import EVENTS_PATH, metrics, service_account_kubeconfig

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CONFIGMAP_PATH = "/api/v1/namespaces/kubesphere-system/configmaps/slipway-operator"
USER_PATH = "/apis/iam.kubesphere.io/v1alpha2/users/admin"
MERGE = "application/merge-patch+json"
# The groups of the CRDs KubeSphere's components bring; the ClusterConfiguration's own (installer.kubesphere.io) is the
# operator's to install.
KUBESPHERE_GROUPS = ("iam.kubesphere.io", "tenant.kubesphere.io", "cluster.kubesphere.io", "monitoring.coreos.com",
                     "fluentbit.fluent.io", "alerting.kubesphere.io", "app.k8s.io")
METRICS_SERVER_IMAGE = "registry.k8s.io/metrics-server/metrics-server:v0.9.0"
# What the nodes of a cluster made without KubeSphere hold (the kubelet's report: every name of each image).
NODE_IMAGES = ("registry.k8s.io/pause:3.10", "registry.k8s.io/kube-proxy:v1.37.1", "registry.k8s.io/coredns/coredns:v1.14.6",
               "ghcr.io/flannel-io/flannel:v0.27.4", METRICS_SERVER_IMAGE)
NODES = {"bare-cp1": {"node-role.kubernetes.io/control-plane": ""}, "bare-w1": {}}
# The operator's settings as an inventory without a cluster model gives them (-e operator_kubesphere_vars). No kubelet
# here runs a pod: a component waited for that is not refused times out, soon.
SETTINGS = {"kubesphere_image_pull_policy": "Never", "kubesphere_wait": True, "kubesphere_wait_timeout": 20,
            "metrics_server_image": METRICS_SERVER_IMAGE, "metrics_server_kubelet_insecure_tls": True}
# Every supported component switched on; the log store (common.es) and Fluent Bit come with logging, events and auditing.
EVERY_COMPONENT = {"metrics_server": {"enabled": True}, "alerting": {"enabled": True}, "auditing": {"enabled": True},
                   "events": {"enabled": True, "ruler": {"enabled": True}},
                   "logging": {"enabled": True, "logsidecar": {"enabled": True}}}
# Where each component the role installs (its table, roles/kubesphere/vars/main.yml) has its status entry: the
# catalogue's status key (plugins/module_utils/_cluster_configuration.py).
with open(ROOT / "roles" / "kubesphere" / "vars" / "main.yml", encoding="utf-8") as _handle:
    _IMPLEMENTED = yaml.safe_load(_handle)["_kubesphere_components"]
STATUS_PATHS = {component.name: component.status_path
                for component in collection.planner(str(ROOT / ".cache" / "collections")).CATALOGUE
                if component.name in _IMPLEMENTED}
# One object of each component, which only its install makes.
OBJECTS = {"metrics_server": "/apis/apps/v1/namespaces/kube-system/deployments/metrics-server",
           "common.es": "/apis/apps/v1/namespaces/kubesphere-logging-system/statefulsets/elasticsearch-logging-data",
           "common.opensearch": "/apis/apps/v1/namespaces/kubesphere-logging-system/statefulsets/opensearch-cluster-data",
           "common.fluentbit": "/apis/apps/v1/namespaces/kubesphere-logging-system/deployments/fluent-operator",
           "core": "/apis/apps/v1/namespaces/kubesphere-system/deployments/ks-apiserver",
           "monitoring": "/apis/apps/v1/namespaces/kubesphere-monitoring-system/deployments/prometheus-operator",
           "alerting": "/apis/monitoring.coreos.com/v1/namespaces/kubesphere-monitoring-system/thanosrulers/kubesphere",
           "auditing": "/apis/apps/v1/namespaces/kubesphere-logging-system/deployments/kube-auditing-webhook-deploy",
           "events": "/apis/apps/v1/namespaces/kubesphere-logging-system/deployments/kube-events-exporter",
           "events.ruler": "/apis/apps/v1/namespaces/kubesphere-logging-system/deployments/kube-events-ruler",
           "logging": "/apis/batch/v1/namespaces/kubesphere-logging-system/cronjobs/elasticsearch-logging-curator",
           "logging.logsidecar": "/apis/apps/v1/namespaces/kubesphere-logging-system/deployments/logsidecar-injector-deploy"}
# What core and monitoring make before their templates' objects (their namespaces aside, which the operator's
# deployment made): a refused component makes none of it.
PREPARED = ("/api/v1/namespaces/kubesphere-system/secrets/kubesphere-admin",
            "/api/v1/namespaces/kubesphere-system/secrets/ks-controller-manager-webhook-cert",
            "/api/v1/namespaces/kubesphere-system/configmaps/kubesphere-config",
            CRDS_PATH + "/users.iam.kubesphere.io", CRDS_PATH + "/prometheuses.monitoring.coreos.com")
WAIT = 900.0
WRITE_VERBS = {"create", "update", "patch", "delete", "escalate", "bind"}


def kubesphere_crds(kube_api) -> list[str]:
    return [crd["metadata"]["name"] for crd in kube_api.request("get", CRDS_PATH)["items"]
            if (crd["spec"]["group"] in KUBESPHERE_GROUPS or crd["spec"]["group"].endswith(".kubesphere.io"))
            and crd["spec"]["group"] != "installer.kubesphere.io"]


def status_of(kube_api) -> dict[str, dict]:
    """Each component's status entry, by the component's name."""
    status = (kube_api.request("get", CC_PATH) or {}).get("status") or {}
    found = {}
    for name, path in STATUS_PATHS.items():
        entry = status
        for key in path:
            entry = entry.get(key) if isinstance(entry, dict) else None
        if isinstance(entry, dict) and "status" in entry:
            found[name] = entry
    return found


def refusal_checks(entry: dict, images: tuple[str, ...]) -> None:
    reason = entry["slipway"]["reason"]
    assert entry["status"] == "failed", entry
    assert reason.startswith("kubesphere_image_pull_policy is Never (nothing is pulled) and the nodes lack images it "
                             "runs. Not in the bundle the cluster was made from: "), reason
    for image in images:
        assert f"{image} (on no node)" in reason, reason
    assert 'on the lab: make lab LAB_VARS="slipway_kubesphere_enabled=true"' in reason, reason
    assert "make bundle" in reason, reason


def nothing_of_core_or_monitoring(kube_api) -> None:
    present = [path for path in (OBJECTS["core"], OBJECTS["monitoring"], *PREPARED) if kube_api.request("get", path) is not None]
    assert present == [], "a refused component made objects"


def start_operator(kube_api, workdir: Path, settings: dict, identity: str):
    """The operator as a local process, as in its pod: a token of its ServiceAccount, its settings file, no ansible.cfg."""
    workdir.mkdir(parents=True, exist_ok=True)
    extra = workdir / "vars.yml"
    extra.write_text(yaml.safe_dump(settings))
    kubeconfig = service_account_kubeconfig(kube_api, workdir / "kubeconfig")
    port = free_port()
    log = workdir / "operator.log"
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
    for name in ("KUBECONFIG", "ANSIBLE_CONFIG", "K8S_AUTH_KUBECONFIG"):
        env.pop(name, None)
    with log.open("wb") as handle:
        proc = subprocess.Popen(  # pylint: disable=consider-using-with  # stopped by stop_operator
            [str(ROOT / ".venv" / "bin" / "python"), "-m", "slipway_operator", "--kubeconfig", str(kubeconfig),
             "--collections-path", str(ROOT / ".cache" / "collections"), "--extra-vars", str(extra), "--port", str(port),
             "--debounce", "1", "--resync", "3600", "--identity", identity, "--workdir", str(workdir / "runner")],
            env=env, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return proc, port, log


def stop_operator(operator) -> None:
    proc, _port, _log = operator
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            stop_processes([proc])


def reconciles(operator, result: str | None = None) -> float:
    """The operator's reconciles that ended with this result (any result without one)."""
    try:
        values = metrics(operator[1])
    except OSError:
        return 0
    return sum(value for key, value in values.items() if key.startswith("slipway_operator_reconciles_total")
               and (result is None or key.endswith(f'{{result="{result}"}}')))


def wait_operator(operator, predicate, what: str):
    proc, _port, log = operator

    def check():
        if proc.poll() is not None:
            raise AssertionError(f"the operator exited with {proc.returncode}:\n" + log.read_text()[-4000:])
        return predicate()
    try:
        return wait_for(check, what, timeout=WAIT)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- operator log\n" + log.read_text()[-6000:]) from None


@pytest.fixture(name="bare", scope="module")
def fixture_bare(kube_api, tmp_path_factory):
    """The API server as it starts (nothing of KubeSphere), two Nodes with a cluster's images but none of KubeSphere's,
    and playbooks/operator.yml run from the controller with the admin kubeconfig."""
    before = {"crds": kubesphere_crds(kube_api), "cc": kube_api.request("get", CRDS_PATH + "/clusterconfigurations.installer.kubesphere.io"),
              "namespaces": [ns["metadata"]["name"] for ns in kube_api.request("get", "/api/v1/namespaces")["items"]
                             if ns["metadata"]["name"].startswith("kubesphere-")]}
    for name, labels in NODES.items():
        kube_api.request("post", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
        kube_api.request("patch", f"/api/v1/nodes/{name}/status", content_type=MERGE, body={"status": {"images": [
            {"names": [image, image.rsplit(":", 1)[0] + "@sha256:" + "0" * 64], "sizeBytes": 1000000} for image in NODE_IMAGES]}})
    workdir = tmp_path_factory.mktemp("deploy")
    deployed = run([str(ROOT / ".venv/bin/ansible-playbook"), str(ROOT / "playbooks" / "operator.yml"),
                    "-e", f"operator_kubeconfig={kube_api.kubeconfig}", "-e", json.dumps({"operator_kubesphere_vars": SETTINGS})],
                   env=ansible_env(kube_api), cwd=workdir)
    assert deployed.returncode == 0, deployed.stdout[-3000:] + deployed.stderr[-3000:]
    yield before
    for name in NODES:
        kube_api.request("delete", f"/api/v1/nodes/{name}")


class TestOperatorOnABareCluster:
    """Each test builds on the one before, on one ClusterConfiguration."""

    def test_nothing_of_kubesphere_was_there(self, kube_api, bare):
        assert bare == {"crds": [], "cc": None, "namespaces": []}
        assert kube_api.request("get", CC_PATH) is None
        assert kubesphere_crds(kube_api) == [], "the operator's deployment installs the ClusterConfiguration's CRD alone"

    def test_its_rbac_names_what_it_writes(self, kube_api, bare):  # pylint: disable=unused-argument
        roles = [kube_api.request("get", "/apis/rbac.authorization.k8s.io/v1/clusterroles/slipway-operator")]
        for namespace in ("kubesphere-system", "kubesphere-monitoring-system", "kubesphere-logging-system", "kube-system"):
            roles.append(kube_api.request("get", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/slipway-operator"))
        # Writes of objects whose names no one knows beforehand: creates the API server cannot authorize by name (a new
        # ClusterConfiguration, the Lease, Events), and the control-plane Nodes' role label.
        unnamed = {("installer.kubesphere.io", "clusterconfigurations"): {"create"}, ("coordination.k8s.io", "leases"): {"create"},
                   ("", "events"): {"create"}, ("", "nodes"): {"patch"}}
        for role in roles:
            for rule in role["rules"]:
                assert "*" not in [*rule["verbs"], *rule["apiGroups"], *rule["resources"], *rule.get("resourceNames", [])], rule
                if set(rule["verbs"]) & WRITE_VERBS and not rule.get("resourceNames"):
                    for group in rule["apiGroups"]:
                        for resource in rule["resources"]:
                            assert set(rule["verbs"]) & WRITE_VERBS <= unnamed.get((group, resource), set()), rule
        users = [rule for rule in roles[0]["rules"] if rule["resources"] == ["users"]]
        assert users == [{"apiGroups": ["iam.kubesphere.io"], "resources": ["users"], "verbs": ["get", "create", "patch"],
                          "resourceNames": ["admin"]}]

    def test_the_playbook_refuses_components_whose_images_the_nodes_lack(self, kube_api, bare, tmp_path):  # pylint: disable=unused-argument
        played = run_role(kube_api, tmp_path, {}, **SETTINGS)
        assert played.returncode != 0, "a failed component fails the run"
        statuses = status_of(kube_api)
        assert sorted(statuses) == ["core", "monitoring"], statuses
        refusal_checks(statuses["core"], ("kubesphere/ks-apiserver:v3.4.1", "kubesphere/ks-console:v3.4.1",
                                          "kubesphere/ks-controller-manager:v3.4.1"))
        refusal_checks(statuses["monitoring"], ("kubesphere/prometheus-operator:v0.55.1", "prom/prometheus:v2.39.1",
                                                "kubesphere/kube-rbac-proxy:v0.11.0", "prom/node-exporter:v1.3.1"))
        assert "kubesphere/kubectl" not in statuses["core"]["slipway"]["reason"], "a ConfigMap's image runs nothing"
        nothing_of_core_or_monitoring(kube_api)

    def test_the_operator_refuses_them_alike_for_ks_installers_file(self, kube_api, bare, tmp_path):  # pylint: disable=unused-argument
        document = next(doc for doc in yaml.safe_load_all(KS_INSTALLER_FILE.read_text()) if doc)
        current = kube_api.request("get", CC_PATH)
        kube_api.request("put", CC_PATH, body={**current, "spec": document["spec"]})
        kube_api.request("put", CC_PATH + "/status", body={**kube_api.request("get", CC_PATH), "status": {}})
        settings = yaml.safe_load(kube_api.request("get", CONFIGMAP_PATH)["data"]["vars.yml"])
        assert settings == SETTINGS, "the settings the deployment wrote"
        operator = start_operator(kube_api, tmp_path / "refusing", settings, "refusing")
        try:
            wait_operator(operator, lambda: reconciles(operator, "component_failed") >= 1, "the operator's first reconcile")
        finally:
            stop_operator(operator)
        statuses = status_of(kube_api)
        assert sorted(statuses) == ["core", "monitoring"], statuses
        refusal_checks(statuses["core"], ("kubesphere/ks-apiserver:v3.4.1",))
        refusal_checks(statuses["monitoring"], ("kubesphere/prometheus-operator:v0.55.1", "prom/alertmanager:v0.23.0"))
        events = [(event["reason"], event["message"]) for event in kube_api.request("get", EVENTS_PATH)["items"]
                  if event.get("reportingComponent") == "slipway-operator"]
        failed = sorted(message.split(" ", 1)[0] for reason, message in events if reason == "ComponentFailed")
        assert failed == ["core", "monitoring"], events
        assert any("kubesphere/prometheus-operator:v0.55.1 (on no node)" in message for _reason, message in events)
        nothing_of_core_or_monitoring(kube_api)

    def test_the_operator_installs_every_supported_component_from_nothing(self, kube_api, bare, tmp_path):  # pylint: disable=unused-argument
        kube_api.request("patch", CC_PATH, body={"spec": EVERY_COMPONENT}, content_type=MERGE)
        # No kubelet here ever runs a pod: nothing is waited for (the images are not checked then either).
        operator = start_operator(kube_api, tmp_path / "installing", {**SETTINGS, "kubesphere_wait": False}, "installing")
        try:
            wait_operator(operator, lambda: reconciles(operator) >= 1, "the reconcile that installs everything")
            statuses = status_of(kube_api)
            assert {name: entry["status"] for name, entry in statuses.items()} == {
                name: "enabled" for name in STATUS_PATHS if name != "common.opensearch"}, statuses
            assert reconciles(operator, "success") == 1
            missing = [name for name, path in OBJECTS.items() if name != "common.opensearch" and kube_api.request("get", path) is None]
            assert missing == []
            user = kube_api.request("get", USER_PATH)
            assert user is not None and user["spec"]["email"] == "admin@kubesphere.io"
            assert "users.iam.kubesphere.io" in kubesphere_crds(kube_api)

            # The log store moved: Elasticsearch removed, OpenSearch installed, each recorded.
            kube_api.request("patch", CC_PATH, body={"spec": {"common": {"opensearch": {"enabled": True}}}}, content_type=MERGE)
            wait_operator(operator, lambda: reconciles(operator) >= 2, "the reconcile that moves the log store")
            statuses = status_of(kube_api)
            assert statuses["common.es"]["status"] == "disabled"
            assert statuses["common.opensearch"]["status"] == "enabled"
            assert kube_api.request("get", OBJECTS["common.es"]) is None
            assert kube_api.request("get", OBJECTS["common.opensearch"]) is not None
            assert {name: entry["slipway"]["reason"] for name, entry in statuses.items() if entry["status"] == "failed"} == {}
            assert reconciles(operator, "success") == 2
        finally:
            stop_operator(operator)
