# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The settings schema: the cluster-wide ``slipway_*`` settings with their defaults, the role variables the model
checks (their defaults read from the roles), and the values each choice accepts. The model (_model.py) checks an
inventory against it; the argument specs and the fleet controller document and offer the same values.
"""

from __future__ import annotations

import copy
import os
from typing import Any

try:
    import yaml
except ImportError:  # a target host's Python: the model runs on the controller, where ansible-core brings PyYAML
    HAS_YAML = False
else:
    HAS_YAML = True

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
    "slipway_artifacts_mirror_insecure_http": False,
    "slipway_artifacts_release_checksums": {},
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

# Role variables the model checks before any contact, by role. Their defaults have one home, the role's
# defaults/main.yml: role_defaults() reads them from there (the roles read the same variables).
ROLE_VARIABLES: dict[str, tuple[str, ...]] = {
    "control_plane": (
        "control_plane_kube_proxy_mode",
        "control_plane_kube_proxy_conntrack_max_per_core",
        "control_plane_coredns_upstreams",
        "control_plane_cert_sans",
        "control_plane_audit_log_maxage",
        "control_plane_audit_log_maxbackup",
        "control_plane_audit_log_maxsize",
        "control_plane_audit_policy_src",
        "control_plane_encryption_provider",
        "control_plane_kubelet_pod_pids_limit",
        "control_plane_join_token_ttl",
        "control_plane_certs_auto_renew",
    ),
    "loadbalancer": (
        "loadbalancer_haproxy_health_port",
        "loadbalancer_keepalived_virtual_router_id",
        "loadbalancer_keepalived_auth_pass",
    ),
    "cni": ("cni_flannel_backend", "cni_manifest_src"),
    "containerd": ("containerd_registry_mirrors", "containerd_insecure_registries", "containerd_registry_auths"),
    "kubesphere": ("kubesphere_cluster_configuration", "kubesphere_cluster_configuration_merge_type"),
    "node": ("node_join_token_ttl",),
    "metrics_server": ("metrics_server_replicas", "metrics_server_kubelet_preferred_address_types"),
    "etcd": ("etcd_pki_dir",),
    "operator": (
        "operator_image_pull_policy",
        "operator_replicas",
        "operator_metrics_port",
        "operator_resync_seconds",
        "operator_debounce_seconds",
        "operator_kubesphere_vars",
    ),
}
ROLE_VARIABLE_NAMES = frozenset(name for names in ROLE_VARIABLES.values() for name in names)
# The collection's roles, next to plugins/ (a checkout, or the collection as ansible-galaxy installs it).
ROLES_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles"))


def role_defaults(roles_dir: str = ROLES_DIR) -> dict[str, Any]:
    """The defaults of ROLE_VARIABLES, as each role's defaults/main.yml sets them (read once per directory)."""
    if roles_dir not in _ROLE_DEFAULTS:
        if not HAS_YAML:
            raise RuntimeError("reading the roles' defaults needs PyYAML (ansible-core's own requirement)")
        found: dict[str, Any] = {}
        for role, names in ROLE_VARIABLES.items():
            path = os.path.join(roles_dir, role, "defaults", "main.yml")
            with open(path, encoding="utf-8") as handle:
                defaults = yaml.safe_load(handle) or {}
            missing = [name for name in names if name not in defaults]
            if missing:
                raise KeyError("%s sets no default for %s" % (path, ", ".join(missing)))
            found.update((name, defaults[name]) for name in names)
        _ROLE_DEFAULTS[roles_dir] = found
    return copy.deepcopy(_ROLE_DEFAULTS[roles_dir])


_ROLE_DEFAULTS: dict[str, dict[str, Any]] = {}


def role_defaults_of(roles: set[str] | frozenset[str], roles_dir: str = ROLES_DIR) -> dict[str, Any]:
    """Every default of the named roles, as their defaults/main.yml set them (the day-2 playbooks' role settings)."""
    found: dict[str, Any] = {}
    for role in sorted(roles):
        key = os.path.join(roles_dir, role)
        if key not in _ROLE_DEFAULTS:
            if not HAS_YAML:
                raise RuntimeError("reading the roles' defaults needs PyYAML (ansible-core's own requirement)")
            with open(os.path.join(key, "defaults", "main.yml"), encoding="utf-8") as handle:
                _ROLE_DEFAULTS[key] = yaml.safe_load(handle) or {}
        found.update(_ROLE_DEFAULTS[key])
    return copy.deepcopy(found)


HARDENING = ("cis", "none")
ENCRYPTION_PROVIDERS = ("aescbc", "secretbox")
KUBE_PROXY_MODES = ("iptables", "nftables", "ipvs")
FLANNEL_BACKENDS = ("vxlan", "host-gw", "wireguard", "udp", "ipip")
KUBELET_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS")
IMAGE_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
MERGE_TYPES = ("merge", "replace")
# The operator's own settings, which operator_kubesphere_vars cannot override.
OPERATOR_OWN_KUBESPHERE_VARS = ("kubesphere_kubeconfig", "kubesphere_cluster_configuration")
