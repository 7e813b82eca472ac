# Unit tests of the Kubernetes side of ClusterConfiguration: which config the connection options
# load and override, and which REST calls ClusterConfigurationApi makes. The kubernetes library is
# replaced by stand-ins (the unit test environment need not have it), so these pin down our logic;
# against a real API server it is the integration tests' job.
from __future__ import annotations

import types

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration as cc
from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration_api
from ansible_collections.slipway.cluster.plugins.module_utils import _k8s
from ansible_collections.slipway.cluster.tests.unit.fixtures.kube_api import FakeApiServer, api_error

ITEM = "/apis/installer.kubesphere.io/v1alpha1/namespaces/kubesphere-system/clusterconfigurations/ks-installer"


class FakeConfiguration:
    def __init__(self):
        self.host = "http://localhost"
        self.api_key = {}
        self.api_key_prefix = {}
        self.refresh_api_key_hook = None
        self.verify_ssl = True
        self.ssl_ca_cert = None
        self.cert_file = None
        self.key_file = None


class FakeConfigLoader:
    """Stands in for kubernetes.config: knows some kubeconfig files, maybe runs in a pod."""

    def __init__(self, files=None, default=None, in_cluster=False):
        self.files = files or {}
        self.default = default
        self.in_cluster = in_cluster
        self.calls = []

    def load_kube_config(self, config_file=None, context=None, client_configuration=None, persist_config=True):
        self.calls.append(("kubeconfig", config_file, context, persist_config))
        config_file = config_file or self.default
        if config_file not in self.files:
            raise _k8s.ConfigException("Invalid kube-config file. No configuration found.")
        contexts = self.files[config_file]
        context = context or "current"
        if context not in contexts:
            raise _k8s.ConfigException("Expected key current-context in kube-config")
        client_configuration.host = contexts[context]
        client_configuration.api_key = {"BearerToken": "Bearer from-kubeconfig"}
        client_configuration.refresh_api_key_hook = lambda configuration: None

    def load_incluster_config(self, client_configuration=None):
        self.calls.append(("incluster",))
        if not self.in_cluster:
            raise _k8s.ConfigException("Service host/port is not set.")
        client_configuration.host = "https://10.96.0.1:443"


@pytest.fixture
def loader(monkeypatch):
    fake = FakeConfigLoader(files={"/etc/kubernetes/admin.conf": {"current": "https://192.0.2.10:6443",
                                                                  "lab": "https://192.0.2.20:6443"}})
    monkeypatch.setattr(_k8s, "k8s_config", fake, raising=False)
    monkeypatch.setattr(_k8s, "k8s_client", types.SimpleNamespace(
        Configuration=FakeConfiguration, ApiClient=lambda configuration: types.SimpleNamespace(configuration=configuration)),
        raising=False)
    return fake


def params(**given):
    base = {key: None for key in _k8s.AUTH_ARG_SPEC}
    base.update(given)
    return base


def test_kubeconfig_and_context_are_loaded_without_writing_back(loader):
    configuration = _k8s.build_api_client(params(kubeconfig="/etc/kubernetes/admin.conf", context="lab")).configuration
    assert configuration.host == "https://192.0.2.20:6443"
    assert loader.calls == [("kubeconfig", "/etc/kubernetes/admin.conf", "lab", False)]


def test_default_kubeconfig_then_in_cluster(loader):
    loader.default = "/etc/kubernetes/admin.conf"
    assert _k8s.build_api_client(params()).configuration.host == "https://192.0.2.10:6443"
    loader.default, loader.in_cluster, loader.calls = None, True, []
    assert _k8s.build_api_client(params()).configuration.host == "https://10.96.0.1:443"
    assert loader.calls == [("kubeconfig", None, None, False), ("incluster",)]


def test_no_configuration_at_all_says_what_to_set(loader):
    with pytest.raises(_k8s.K8sError, match="set kubeconfig .or K8S_AUTH_KUBECONFIG."):
        _k8s.build_api_client(params())


@pytest.mark.parametrize("given", [
    {"kubeconfig": "/missing.conf"},
    {"kubeconfig": "/etc/kubernetes/admin.conf", "context": "nope"},
    {"context": "lab"},
])
def test_a_given_kubeconfig_that_does_not_load_fails_without_falling_back(loader, given):
    loader.in_cluster = True
    with pytest.raises(_k8s.K8sError, match="cannot load the Kubernetes client configuration"):
        _k8s.build_api_client(params(**given))
    assert ("incluster",) not in loader.calls


def test_host_alone_loads_nothing(loader):
    configuration = _k8s.build_api_client(params(host="https://192.0.2.30:6443", api_key="t0ken")).configuration
    assert loader.calls == []
    assert configuration.host == "https://192.0.2.30:6443"
    assert configuration.api_key == {"BearerToken": "Bearer t0ken", "authorization": "Bearer t0ken"}


def test_options_override_the_kubeconfig(loader):
    configuration = _k8s.build_api_client(params(
        kubeconfig="/etc/kubernetes/admin.conf", host="https://lb.example:6443", api_key="t0ken", validate_certs=False,
        ca_cert="/pki/ca.crt", client_cert="/pki/admin.crt", client_key="/pki/admin.key")).configuration
    assert configuration.host == "https://lb.example:6443"
    assert configuration.api_key["BearerToken"] == "Bearer t0ken"
    assert configuration.refresh_api_key_hook is None
    assert configuration.api_key_prefix == {}
    assert (configuration.verify_ssl, configuration.ssl_ca_cert, configuration.cert_file, configuration.key_file) == (
        False, "/pki/ca.crt", "/pki/admin.crt", "/pki/admin.key")


def test_unset_options_keep_the_kubeconfig(loader):
    configuration = _k8s.build_api_client(params(kubeconfig="/etc/kubernetes/admin.conf")).configuration
    assert configuration.verify_ssl is True
    assert configuration.api_key == {"BearerToken": "Bearer from-kubeconfig"}
    assert configuration.refresh_api_key_hook is not None


def test_auth_options_match_kubernetes_core():
    env = {name: spec["fallback"][1] for name, spec in _k8s.AUTH_ARG_SPEC.items()}
    assert env == {
        "kubeconfig": ["K8S_AUTH_KUBECONFIG"], "context": ["K8S_AUTH_CONTEXT"], "host": ["K8S_AUTH_HOST"],
        "api_key": ["K8S_AUTH_API_KEY"], "validate_certs": ["K8S_AUTH_VERIFY_SSL"], "ca_cert": ["K8S_AUTH_SSL_CA_CERT"],
        "client_cert": ["K8S_AUTH_CERT_FILE"], "client_key": ["K8S_AUTH_KEY_FILE"],
    }
    assert _k8s.AUTH_ARG_SPEC["api_key"]["no_log"] is True
    assert {name: spec.get("aliases") for name, spec in _k8s.AUTH_ARG_SPEC.items() if spec.get("aliases")} == {
        "validate_certs": ["verify_ssl"], "ca_cert": ["ssl_ca_cert"], "client_cert": ["cert_file"], "client_key": ["key_file"]}


# --- ClusterConfigurationApi -----------------------------------------------------------------

def test_api_client_is_wrapped_in_a_dynamic_client_without_discovery(monkeypatch):
    made = []

    class FakeDynamicClient:
        def __init__(self, client, cache_file=None, discoverer=None):
            made.append((client, cache_file, discoverer))

    monkeypatch.setattr(_k8s, "DynamicClient", FakeDynamicClient, raising=False)
    api = _cluster_configuration_api.ClusterConfigurationApi("the-api-client", name="cc", namespace="ns")
    assert made == [("the-api-client", None, _k8s.NoDiscovery)]
    assert api.path == "/apis/installer.kubesphere.io/v1alpha1/namespaces/ns/clusterconfigurations/cc"


@pytest.mark.parametrize("served, subresource, info", [
    (True, True, {"served": True, "status_subresource": True}),
    (True, False, {"served": True, "status_subresource": False}),
    (False, False, {"served": False, "status_subresource": False}),
])
def test_resource_info(served, subresource, info):
    server = FakeApiServer(served=served, status_subresource=subresource)
    assert _cluster_configuration_api.ClusterConfigurationApi(requester=server).resource_info() == info


def test_require_served_points_at_the_crd():
    with pytest.raises(_k8s.K8sError, match="install the ClusterConfiguration CRD first"):
        _cluster_configuration_api.ClusterConfigurationApi(requester=FakeApiServer(served=False)).require_served()


def test_get_create_patch_use_plain_rest_paths_and_merge_patches():
    server = FakeApiServer()
    api = _cluster_configuration_api.ClusterConfigurationApi(requester=server)
    assert api.get() is None
    created = api.create({"apiVersion": cc.API_VERSION, "kind": cc.KIND,
                          "metadata": {"name": "ks-installer", "namespace": "kubesphere-system"}, "spec": {"a": 1}})
    assert created["metadata"]["generation"] == 1
    assert api.patch({"spec": {"b": 2}})["spec"] == {"a": 1, "b": 2}
    assert api.patch_status({"status": {"core": {"status": "enabled"}}}, subresource=True)["status"] == {
        "core": {"status": "enabled"}}
    assert [(method, path, content_type) for method, path, dummy, content_type in server.calls] == [
        ("get", ITEM, None),
        ("post", ITEM.rsplit("/", 1)[0], None),
        ("patch", ITEM, "application/merge-patch+json"),
        ("patch", ITEM + "/status", "application/merge-patch+json"),
    ]


def test_status_without_subresource_is_patched_on_the_resource():
    server = FakeApiServer(obj={"spec": {}}, status_subresource=False)
    api = _cluster_configuration_api.ClusterConfigurationApi(requester=server)
    assert api.patch_status({"status": {"core": {"status": "enabled"}}}, subresource=False)["status"]["core"]["status"] == "enabled"
    assert server.calls[-1][1] == ITEM


def test_create_in_a_missing_namespace_says_so():
    api = _cluster_configuration_api.ClusterConfigurationApi(requester=FakeApiServer(namespaces=()))
    with pytest.raises(_k8s.K8sError, match="does namespace kubesphere-system exist") as caught:
        api.create({"metadata": {"name": "ks-installer"}, "spec": {}})
    assert caught.value.status == 404


def test_api_errors_carry_what_the_server_said():
    class Forbidding:
        def request(self, method, path, body=None, **params):
            raise api_error(403, "Forbidden", 'clusterconfigurations is forbidden: User "bob" cannot get resource')

    with pytest.raises(_k8s.K8sError) as caught:
        _cluster_configuration_api.ClusterConfigurationApi(requester=Forbidding()).get()
    assert caught.value.status == 403
    assert caught.value.reason == "Forbidden"
    assert "GET %s failed: 403 Forbidden" % ITEM in caught.value.msg
    assert 'User "bob" cannot get resource' in caught.value.msg
    assert caught.value.details()["status"] == 403


def test_unreachable_api_server():
    class Unreachable:
        def request(self, method, path, body=None, **params):
            raise _k8s.Urllib3Error("Max retries exceeded with url: /apis")

    with pytest.raises(_k8s.K8sError, match="cannot reach the Kubernetes API server: Max retries"):
        _cluster_configuration_api.ClusterConfigurationApi(requester=Unreachable()).resource_info()
