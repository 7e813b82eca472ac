# Unit tests of the kubespray rule: a kubespray variable is never read; one that would give another
# cluster than ours is an error naming our setting and the value to give it.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._kubespray import KUBESPRAY, check
from ansible_collections.slipway.cluster.plugins.module_utils._settings import DEFAULT_SETTINGS, role_defaults

OURS = {**DEFAULT_SETTINGS, **role_defaults()}


def messages(given, **ours):
    problems, dummy = check(given, {**OURS, **ours})
    return [f"{name}: {message}" for name, message in problems]


@pytest.mark.parametrize("name,value,expected", [
    ("kube_version", "v1.28.3", "kube_version: 'v1.28.3' is kubespray's and is not read; slipway.cluster reads "
     "slipway_kubernetes_version ('1.37.1') and slipway.cluster installs 1.36, 1.37, not 1.28: set "
     "slipway_kubernetes_version to one of those and remove kube_version"),
    ("kube_version", "v1.36.2", "kube_version: 'v1.36.2' is kubespray's and is not read; slipway.cluster reads "
     "slipway_kubernetes_version ('1.37.1'): set slipway_kubernetes_version: 1.36.2 and remove kube_version"),
    ("kube_pods_subnet", "10.42.0.0/16", "set slipway_pod_cidr: 10.42.0.0/16 and remove kube_pods_subnet"),
    ("kube_service_addresses", "10.43.0.0/16", "set slipway_service_cidr: 10.43.0.0/16 and remove kube_service_addresses"),
    ("kube_network_node_prefix", "25", "set slipway_node_cidr_mask_size: 25 and remove kube_network_node_prefix"),
    ("kube_network_plugin", "calico", "set slipway_cni: calico and remove kube_network_plugin"),
    ("kube_network_plugin", "weave", "slipway.cluster reads slipway_cni ('flannel'), which has no equivalent of it"),
    ("kube_proxy_mode", "ipvs", "set control_plane_kube_proxy_mode: ipvs and remove kube_proxy_mode"),
    ("auto_renew_certificates", True, "auto_renew_certificates: true is kubespray's and is not read; slipway.cluster reads "
     "control_plane_certs_auto_renew (false): set control_plane_certs_auto_renew: true and remove auto_renew_certificates"),
    ("cluster_name", "corp.local", "set slipway_dns_domain: corp.local and remove cluster_name"),
    ("etcd_deployment_type", "host", "set slipway_etcd_mode: external and remove etcd_deployment_type"),
    ("files_repo", "http://files.example", "set slipway_artifacts_mirror_url: http://files.example "
     "(with slipway_artifacts_source: mirror) and remove files_repo"),
    ("enable_nodelocaldns", True, "enable_nodelocaldns: true is kubespray's and is not read; slipway.cluster installs "
     "no NodeLocal DNSCache, which is enable_nodelocaldns: false: remove enable_nodelocaldns"),
    ("kube_cert_dir", "/etc/kubernetes/ssl", "the certificates stay where kubeadm puts them"),
    ("loadbalancer_apiserver", {"address": "10.0.0.5", "port": 6443}, "loadbalancer_apiserver: '10.0.0.5:6443' is "
     "kubespray's and is not read; slipway.cluster reads slipway_lb_mode ('local_haproxy') and "
     "slipway_control_plane_endpoint (''): set slipway_lb_mode: external and slipway_control_plane_endpoint: "
     "10.0.0.5:6443 and remove loadbalancer_apiserver"),
    ("loadbalancer_apiserver_port", 6443, "slipway.cluster's local haproxy listens on slipway_lb_port (8443)"),
    ("loadbalancer_apiserver_type", "nginx", "slipway.cluster's local load balancer is haproxy"),
])
def test_a_kubespray_setting_that_differs_is_named_with_ours(name, value, expected):
    found = messages({name: value})
    assert len(found) == 1 and expected in found[0], found
    assert found[0].startswith(f"{name}: ")


@pytest.mark.parametrize("given", [
    {"kube_version": "v1.37.1", "kube_pods_subnet": "10.233.64.0/18", "kube_service_addresses": "10.233.0.0/18"},
    {"kube_network_node_prefix": "24", "kube_network_plugin": "flannel", "kube_proxy_mode": "iptables"},
    {"cluster_name": "cluster.local", "dns_domain": "cluster.local", "kube_apiserver_port": 6443},
    {"enable_nodelocaldns": "false", "helm_enabled": False, "container_manager": "containerd", "dns_mode": "coredns"},
    {"etcd_deployment_type": "kubeadm", "loadbalancer_apiserver_localhost": True, "loadbalancer_apiserver_port": 8443},
    {"kube_image_repo": "registry.k8s.io", "metrics_server_enabled": True, "kube_config_dir": "/etc/kubernetes"},
])
def test_a_kubespray_setting_that_does_what_we_do_is_accepted(given):
    problems, accepted = check(given, OURS)
    assert problems == []
    assert accepted == sorted(given)


def test_the_endpoint_of_an_external_load_balancer_is_accepted_when_ours_says_the_same():
    given = {"loadbalancer_apiserver": {"address": "10.0.0.5", "port": 8383}, "loadbalancer_apiserver_localhost": False}
    assert messages(given, slipway_lb_mode="external", slipway_control_plane_endpoint="10.0.0.5:8383") == []
    assert messages(given, slipway_lb_mode="external", slipway_control_plane_endpoint="10.0.0.6:8383")


def test_files_repo_needs_the_mirror_source_too():
    assert messages({"files_repo": "http://f.example/"}, slipway_artifacts_source="mirror",
                    slipway_artifacts_mirror_url="http://f.example") == []
    assert messages({"files_repo": "http://f.example"}, slipway_artifacts_mirror_url="http://f.example")


def test_registry_credentials_in_kubespray_shape_are_named_without_their_values():
    found = messages({"containerd_registry_auth": [{"registry": "r:5000", "username": "u", "password": "secret"}]})
    assert len(found) == 1 and "containerd_registry_auths" in found[0] and "secret" not in found[0].split("is kubespray")[1]


def test_every_row_is_in_the_documented_table():
    with open(__file__.split("/tests/", maxsplit=1)[0] + "/docs/kubespray.md", encoding="utf-8") as handle:
        table = handle.read()
    missing = [name for name in KUBESPRAY if f"`{name}`" not in table]
    assert missing == []


def test_no_row_is_a_variable_of_our_roles():
    import glob

    import yaml

    ours = set()
    for path in glob.glob(__file__.split("/tests/", maxsplit=1)[0] + "/roles/*/defaults/main.yml"):
        with open(path, encoding="utf-8") as handle:
            ours.update(yaml.safe_load(handle) or {})
    assert sorted(ours & set(KUBESPRAY)) == []
