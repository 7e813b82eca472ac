# Unit tests of slipway.cluster.cluster_configuration against an in-memory API server: create,
# merge, replace, check mode, diff, idempotence, ks-installer's CRD, and clear failures.
from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration as cc
from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration_runner as runner
from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration_api
from ansible_collections.slipway.cluster.plugins.module_utils import _k8s
from ansible_collections.slipway.cluster.plugins.modules import cluster_configuration
from ansible_collections.slipway.cluster.tests.unit.fixtures.kube_api import FakeApiServer
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import Runner

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
PUBLISHED = os.path.join(FIXTURES, "ks-installer-v3.3.2-cluster-configuration.yaml")


def published():
    with open(PUBLISHED, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture
def server():
    return FakeApiServer()


@pytest.fixture
def run(monkeypatch, server):
    runner_ = Runner(monkeypatch, server)
    return lambda args, **kwargs: runner_.run(cluster_configuration, args, **kwargs)


def test_published_file_applies_unchanged_and_again_changes_nothing(run, server):
    kind, result = run({"src": PUBLISHED})
    assert kind == "exit", result
    assert result["changed"] is True and result["created"] is True
    assert result["spec"] == published()["spec"]
    assert result["labels"] == {"version": "v3.3.2"}
    assert result["generation"] == 1
    assert result["status"] == {}
    stored = server.stored()
    assert stored["spec"] == published()["spec"]
    assert stored["metadata"]["labels"] == {"version": "v3.3.2"}
    writes = len(server.writes())
    kind, again = run({"src": PUBLISHED})
    assert (kind, again["changed"], again["created"]) == ("exit", False, False)
    assert len(server.writes()) == writes
    assert again["generation"] == 1


def test_definition_as_yaml_text_with_other_documents(run, server):
    text = "---\nkind: CustomResourceDefinition\n---\napiVersion: v1\nkind: Namespace\n" + open(PUBLISHED, encoding="utf-8").read()
    kind, result = run({"definition": text})
    assert kind == "exit", result
    assert server.stored()["spec"] == published()["spec"]


def test_definition_as_mapping(run, server):
    kind, result = run({"definition": published()})
    assert kind == "exit", result
    assert result["created"] is True


def test_check_mode_create_writes_nothing(run, server):
    kind, result = run({"definition": published()}, check_mode=True, diff=True)
    assert kind == "exit", result
    assert result["changed"] is True and result["created"] is True
    assert result["spec"] == published()["spec"]
    assert result["generation"] == 1
    assert result["diff"]["before"] == {}
    assert result["diff"]["after"]["spec"] == published()["spec"]
    assert server.writes() == []
    assert server.stored() is None


def stored_with(server, spec, status=None, labels=None):
    obj = {"metadata": {"labels": labels or {"version": "v3.3.2"}, "generation": 4}, "spec": copy.deepcopy(spec)}
    if status is not None:
        obj["status"] = status
    server.put(obj)


def test_merge_changes_only_what_is_given(run, server):
    stored_with(server, published()["spec"], status={"core": {"status": "enabled"}})
    kind, result = run({"spec": {"logging": {"enabled": True}, "events": {"ruler": {"enabled": True}}}}, diff=True)
    assert kind == "exit", result
    assert result["changed"] is True and result["created"] is False
    expected = cc.apply_merge_patch(published()["spec"], {"logging": {"enabled": True}, "events": {"ruler": {"enabled": True}}})
    assert result["spec"] == expected == server.stored()["spec"]
    assert result["status"] == {"core": {"status": "enabled"}}
    assert result["generation"] == 5
    method, path, body, content_type = server.writes()[0]
    assert (method, content_type) == ("patch", "application/merge-patch+json")
    assert body == {"spec": {"logging": {"enabled": True}, "events": {"ruler": {"enabled": True}}}}
    assert result["diff"]["before"]["spec"]["logging"]["enabled"] is False
    assert result["diff"]["after"]["spec"]["logging"]["enabled"] is True


def test_merge_with_null_removes_a_key(run, server):
    stored_with(server, {"devops": {"enabled": True, "jenkinsMemoryLim": "4Gi"}})
    kind, result = run({"spec": {"devops": {"jenkinsMemoryLim": None}}})
    assert kind == "exit", result
    assert server.stored()["spec"] == {"devops": {"enabled": True}}


def test_merge_that_changes_nothing_writes_nothing(run, server):
    stored_with(server, published()["spec"])
    kind, result = run({"spec": {"logging": {"enabled": False}}})
    assert (kind, result["changed"]) == ("exit", False)
    assert server.writes() == []
    assert result["generation"] == 4


def test_replace_makes_the_spec_exactly_the_given_one(run, server):
    stored_with(server, {"devops": {"enabled": True}, "logging": {"enabled": True}})
    kind, result = run({"spec": {"logging": {"enabled": True}}, "merge_type": "replace"})
    assert kind == "exit", result
    assert server.stored()["spec"] == {"logging": {"enabled": True}}
    assert server.writes()[0][2] == {"spec": {"devops": None}}


def test_check_mode_update_predicts_without_writing(run, server):
    stored_with(server, published()["spec"])
    kind, result = run({"spec": {"devops": {"enabled": True}}}, check_mode=True)
    assert kind == "exit", result
    assert result["changed"] is True
    assert result["spec"]["devops"]["enabled"] is True
    assert result["generation"] == 5
    assert server.writes() == []
    assert server.stored()["spec"]["devops"]["enabled"] is False


def test_labels_of_the_definition_are_merged(run, server):
    stored_with(server, published()["spec"], labels={"version": "v3.3.2", "team": "platform"})
    definition = published()
    definition["metadata"]["labels"]["version"] = "v3.4.1"
    kind, result = run({"definition": definition})
    assert kind == "exit", result
    assert result["changed"] is True
    assert result["labels"] == {"version": "v3.4.1", "team": "platform"}
    assert server.writes()[0][2] == {"metadata": {"labels": {"version": "v3.4.1"}}}
    assert result["generation"] == 4


def test_ks_installers_crd_keeps_status_on_spec_merge(run, monkeypatch):
    server = FakeApiServer(status_subresource=False)
    stored_with(server, published()["spec"], status={"core": {"status": "enabled", "version": "v3.3.2"}})
    kind, result = Runner(monkeypatch, server).run(cluster_configuration, {"spec": {"alerting": {"enabled": True}}})
    assert kind == "exit", result
    assert server.stored()["status"] == {"core": {"status": "enabled", "version": "v3.3.2"}}
    assert server.stored()["spec"]["alerting"]["enabled"] is True


def test_other_name_and_namespace(run, server):
    server.namespaces.add("platform")
    kind, result = run({"spec": {"devops": {"enabled": True}}, "name": "cc", "namespace": "platform"})
    assert kind == "exit", result
    assert server.stored("platform", "cc")["spec"] == {"devops": {"enabled": True}}


@pytest.mark.parametrize("args, words", [
    ({"definition": {"kind": "ConfigMap", "spec": {}}}, "kind is ConfigMap"),
    ({"definition": {"metadata": {"name": "other"}, "spec": {}}}, "metadata.name is other"),
    ({"definition": "kind: Namespace\n"}, "no document of kind ClusterConfiguration"),
    ({"definition": "a: [\n"}, "definition is not valid YAML"),
    ({"definition": [{"kind": "Namespace"}]}, "no document of kind ClusterConfiguration"),
    ({"src": "/nonexistent/cluster-configuration.yaml"}, "is not a file on this host"),
    ({"spec": {}, "src": PUBLISHED}, "mutually exclusive"),
    ({}, "one of the following is required"),
    ({"spec": {}, "merge_type": "strategic"}, "merge_type"),
])
def test_bad_input_fails_clearly(run, server, args, words):
    kind, result = run(args)
    assert kind == "fail"
    assert words in result["msg"]
    assert server.writes() == []


def test_crd_not_installed(monkeypatch):
    kind, result = Runner(monkeypatch, FakeApiServer(served=False)).run(cluster_configuration, {"spec": {}})
    assert kind == "fail"
    assert "install the ClusterConfiguration CRD first" in result["msg"]


def test_missing_namespace(monkeypatch):
    kind, result = Runner(monkeypatch, FakeApiServer(namespaces=())).run(cluster_configuration, {"spec": {}})
    assert kind == "fail"
    assert "does namespace kubesphere-system exist" in result["msg"]
    assert result["api_status"] == 404


def test_missing_kubernetes_library_fails_with_the_usual_message(monkeypatch):
    run_module = Runner(monkeypatch, FakeApiServer(), keep_connect=True)
    monkeypatch.setattr(_k8s, "HAS_K8S", False)
    kind, result = run_module.run(cluster_configuration, {"spec": {}})
    assert kind == "fail"
    assert "Failed to import the required Python library (kubernetes)" in result["msg"]


def test_connection_options_come_from_kubernetes_core_environment_variables(monkeypatch):
    server = FakeApiServer()
    run_module = Runner(monkeypatch, server, keep_connect=True)
    seen = {}

    def build(params):
        seen.update(params)
        return "api-client"

    def api(api_client, name, namespace):
        assert api_client == "api-client"
        return _cluster_configuration_api.ClusterConfigurationApi(requester=server, name=name, namespace=namespace)

    monkeypatch.setattr(_k8s, "HAS_K8S", True)
    monkeypatch.setattr(_k8s, "build_api_client", build)
    monkeypatch.setattr(runner, "ClusterConfigurationApi", api)
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/etc/kubernetes/admin.conf")
    monkeypatch.setenv("K8S_AUTH_CONTEXT", "lab")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "false")
    kind, result = run_module.run(cluster_configuration, {"spec": {}, "host": "https://192.0.2.1:6443"})
    assert kind == "exit", result
    assert (seen["kubeconfig"], seen["context"], seen["validate_certs"], seen["host"]) == (
        "/etc/kubernetes/admin.conf", "lab", False, "https://192.0.2.1:6443")


def test_connection_errors_fail_the_module(monkeypatch):
    run_module = Runner(monkeypatch, FakeApiServer(), keep_connect=True)

    def build(params):
        raise _k8s.K8sError("cannot load the Kubernetes client configuration: no kubeconfig")

    monkeypatch.setattr(_k8s, "HAS_K8S", True)
    monkeypatch.setattr(_k8s, "build_api_client", build)
    kind, result = run_module.run(cluster_configuration, {"spec": {}})
    assert kind == "fail"
    assert result["msg"].startswith("cannot load the Kubernetes client configuration")
