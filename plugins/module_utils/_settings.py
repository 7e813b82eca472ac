# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The settings schema: the cluster-wide ``slipway_*`` settings with their defaults, the role variables the model
checks with the roles' defaults, and the values each choice accepts. Data only: the model (_model.py) checks
an inventory against it, the argument specs and the fleet controller document and offer the same values.
"""

from __future__ import annotations

from typing import Any

SUPPORTED_KUBERNETES_MINORS = ("1.36", "1.37")
LB_MODES = ("local_haproxy", "vip", "external")
CNIS = ("flannel", "calico", "cilium", "none")
ETCD_MODES = ("stacked", "external")
ARTIFACT_SOURCES = ("upstream", "mirror", "bundle")

GROUP_CONTROL_PLANE = "kube_control_plane"
GROUP_NODE = "kube_node"
GROUP_ETCD = "etcd"
GROUP_LB = "loadbalancer"
GROUP_K8S_CLUSTER = "k8s_cluster"


DEFAULT_SETTINGS: dict[str, Any] = {
    "slipway_cluster_name": "slipway",
    "slipway_kubernetes_version": "1.37.1",
    "slipway_dns_domain": "cluster.local",
    "slipway_pod_cidr": "10.233.64.0/18",
    "slipway_service_cidr": "10.233.0.0/18",
    "slipway_node_cidr_mask_size": 24,
    "slipway_lb_mode": "local_haproxy",
    "slipway_lb_port": 8443,
    "slipway_apiserver_port": 6443,
    "slipway_control_plane_endpoint": "",
    "slipway_cni": "flannel",
    "slipway_etcd_mode": "stacked",
    "slipway_artifacts_source": "upstream",
    "slipway_artifacts_bundle_dir": "",
    "slipway_artifacts_mirror_url": "",
    "slipway_artifacts_registry_mirror": "",
    "slipway_kubesphere_enabled": False,
    "slipway_operator_enabled": False,
    "slipway_hardening": "cis",
    "slipway_secrets_encryption": True,
    "slipway_etcd_even_members_ok": False,
}

# slipway_* names that are ours but not settings of the model: the model's own fact, and the lab's
# variables (lab/lab.py writes slipway_lab_cluster, slipway_lab_subnet, slipway_lab_vip).
OWN_VARIABLES = ("slipway_cluster",)
OWN_PREFIXES = ("slipway_lab_",)

# Role variables the model checks before any contact, with the roles' defaults (a unit test keeps
# them equal to the roles' defaults/main.yml and argument specs). The roles read the same variables.
ROLE_DEFAULTS: dict[str, Any] = {
    "control_plane_kube_proxy_mode": "iptables",
    "control_plane_kube_proxy_conntrack_max_per_core": "auto",
    "control_plane_coredns_upstreams": ["/etc/resolv.conf"],
    "control_plane_cert_sans": [],
    "loadbalancer_haproxy_health_port": 8404,
    "loadbalancer_keepalived_virtual_router_id": 0,
    "loadbalancer_keepalived_auth_pass": "",
    "cni_flannel_backend": "vxlan",
    "cni_manifest_src": "",
    "containerd_registry_mirrors": {},
    "containerd_insecure_registries": [],
    "containerd_registry_auths": {},
    "kubesphere_cluster_configuration": {},
    "kubesphere_cluster_configuration_merge_type": "merge",
    "node_join_token_ttl": "15m",
    "metrics_server_replicas": 1,
    "metrics_server_kubelet_preferred_address_types": ["InternalIP"],
    "control_plane_audit_log_maxage": 30,
    "control_plane_audit_log_maxbackup": 10,
    "control_plane_audit_log_maxsize": 100,
    "control_plane_audit_policy_src": "",
    "control_plane_encryption_provider": "aescbc",
    "control_plane_kubelet_pod_pids_limit": 4096,
    "control_plane_join_token_ttl": "15m",
    "etcd_pki_dir": "/etc/etcd/pki",
    "operator_image_pull_policy": "IfNotPresent",
    "operator_replicas": 2,
    "operator_metrics_port": 8080,
    "operator_resync_seconds": 300,
    "operator_debounce_seconds": 2,
    "operator_kubesphere_vars": {},
    "control_plane_certs_auto_renew": False,
}
HARDENING = ("cis", "none")
ENCRYPTION_PROVIDERS = ("aescbc", "secretbox")
KUBE_PROXY_MODES = ("iptables", "nftables", "ipvs")
FLANNEL_BACKENDS = ("vxlan", "host-gw", "wireguard", "udp", "ipip")
KUBELET_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS")
IMAGE_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
MERGE_TYPES = ("merge", "replace")
# The operator's own settings, which operator_kubesphere_vars cannot override.
OPERATOR_OWN_KUBESPHERE_VARS = ("kubesphere_kubeconfig", "kubesphere_cluster_configuration")
