# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The role variables the model checks before any host is touched (_settings.ROLE_VARIABLES): registries and
their credentials, certificate SANs, CoreDNS upstreams, the audit and encryption settings, kube-proxy, the load
balancer, flannel, metrics-server, KubeSphere's ClusterConfiguration and the operator, each refused with what to
write instead. Pure Python: check_roles is called by the model with the variables and their roles' defaults.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Mapping

from ansible_collections.slipway.cluster.plugins.module_utils._problems import Collector
from ansible_collections.slipway.cluster.plugins.module_utils._settings import (
    ENCRYPTION_PROVIDERS,
    FLANNEL_BACKENDS,
    IMAGE_PULL_POLICIES,
    KUBE_PROXY_MODES,
    KUBELET_ADDRESS_TYPES,
    MERGE_TYPES,
    OPERATOR_OWN_KUBESPHERE_VARS,
)
from ansible_collections.slipway.cluster.plugins.module_utils._values import (
    SAFE_PATH,
    BundleReader,
    as_ip,
    bad_values,
    check_url,
    dns_name_problem,
    integer,
    parse_endpoint,
)


# A registry as containerd names its directory under certs.d: host[:port] (or containerd's _default).
_REGISTRY_HOST = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$")


def _check_registries(col: Collector, role: Mapping[str, Any]) -> None:
    mirrors = role["containerd_registry_mirrors"]
    if not isinstance(mirrors, Mapping):
        col.error("containerd_registry_mirrors", f"'{mirrors}' is not a mapping; set it like "
                  "{{docker.io: [https://mirror.example:5000]}}")
    else:
        for registry, urls in mirrors.items():
            var = f"containerd_registry_mirrors[{registry}]"
            if not isinstance(urls, list) or not urls:
                col.error(var, f"'{urls}' is not a list of mirror URLs; set it like [https://mirror.example:5000]")
                continue
            for url in urls:
                check_url(col, var, url, "https://mirror.example:5000")
        bad = [registry for registry in mirrors if not _registry_host(registry)]
        if bad:
            col.error("containerd_registry_mirrors", f"has the key(s) {bad_values(bad)}, not registry hosts: each "
                      "key names a directory under /etc/containerd/certs.d; write host[:port] without a scheme or path, "
                      "like docker.io or registry.example:5000 (or _default)")
    insecure = role["containerd_insecure_registries"]
    if not isinstance(insecure, list) or not all(isinstance(item, str) and item.strip() for item in insecure):
        col.error("containerd_insecure_registries", f"'{insecure}' is not a list of registry hosts (host[:port])")
    else:
        bad = [registry for registry in insecure if not _registry_host(registry)]
        if bad:
            col.error("containerd_insecure_registries", f"{bad_values(bad)} not registry hosts; write host[:port] "
                      "without a scheme or path, like registry.example:5000")
    auths = role["containerd_registry_auths"]
    if isinstance(auths, Mapping):
        bad = [registry for registry in auths if not _registry_host(registry)]
        if bad:
            col.error("containerd_registry_auths", f"has the key(s) {bad_values(bad)}, not registry hosts; write "
                      "host[:port] without a scheme or path, like registry.example:5000")
    if not isinstance(auths, Mapping) or not all(
            isinstance(auth, Mapping) and {"username", "password"} <= set(auth) for auth in auths.values()):
        # Never the value: it holds passwords.
        col.error("containerd_registry_auths", "is not a mapping of registry host to {username: ..., password: ...}")


def _registry_host(registry: Any) -> bool:
    return isinstance(registry, str) and (registry == "_default" or bool(_REGISTRY_HOST.match(registry)))


def _check_cert_sans(col: Collector, sans: Any) -> None:
    """Extra names of the API server's certificate (kubeadm's certSANs): each a DNS name or an IP address."""
    if not isinstance(sans, list):
        col.error("control_plane_cert_sans", f"is a {type(sans).__name__}; set a list of DNS names and IP addresses, "
                  "like [api.example.com, 192.0.2.10]")
        return
    bad = [san for san in sans if not (isinstance(san, str) and as_ip(san) is not None and san.strip() == san)
           and dns_name_problem(san, wildcard=True)]
    if bad:
        col.error("control_plane_cert_sans", f"{bad_values(bad)} {'is' if len(bad) == 1 else 'are'} neither a DNS "
                  "name nor an IP address, which is all a certificate's subject alternative name holds; write each as "
                  "a DNS name (api.example.com, *.example.com) or an IP address (192.0.2.10)")


def _coredns_upstream(value: Any) -> bool:
    """One of CoreDNS's forward destinations as the role writes them: IP, IP:port, [IPv6]:port, or a resolv.conf path."""
    if not isinstance(value, str) or value != value.strip() or not value:
        return False
    if value.startswith("/"):
        return bool(SAFE_PATH.match(value))
    if as_ip(value) is not None:
        return True
    host, port = parse_endpoint(value, 53)
    bracketed = value.startswith("[") or value.count(":") == 1
    return bracketed and port is not None and as_ip(host) is not None


def _check_coredns_upstreams(col: Collector, upstreams: Any) -> None:
    if not isinstance(upstreams, list):
        col.error("control_plane_coredns_upstreams", f"is a {type(upstreams).__name__}; set a list of resolvers, like "
                  "[192.0.2.53, '192.0.2.54:5353'], or [] to answer inside the cluster only")
        return
    bad = [upstream for upstream in upstreams if not _coredns_upstream(upstream)]
    if bad:
        col.error("control_plane_coredns_upstreams", f"{bad_values(bad)} {'is' if len(bad) == 1 else 'are'} not a "
                  "resolver CoreDNS forwards to; write each as an IP address with an optional port (192.0.2.53, "
                  "192.0.2.53:5353, [2001:db8::53]:53) or the path of a resolv.conf on the nodes (/etc/resolv.conf)")


def check_roles(col: Collector, role: Mapping[str, Any], lb_mode: str, cni: str, kubesphere: bool,
                endpoint: Mapping[str, Any], control_planes: list[str], reader: BundleReader | None = None) -> None:
    """The role variables whose mistakes the roles would otherwise find only after hosts changed."""
    if role["control_plane_kube_proxy_mode"] not in KUBE_PROXY_MODES:
        col.error("control_plane_kube_proxy_mode", f"unknown value '{role['control_plane_kube_proxy_mode']}'; "
                  f"set one of: {', '.join(KUBE_PROXY_MODES)}")
    conntrack = role["control_plane_kube_proxy_conntrack_max_per_core"]
    if str(conntrack).strip() != "auto":
        integer(col, "control_plane_kube_proxy_conntrack_max_per_core", conntrack, 0, 2**31 - 1,
                "auto or a number (0 leaves nf_conntrack_max alone)")
    if cni == "flannel" and role["cni_flannel_backend"] not in FLANNEL_BACKENDS:
        col.error("cni_flannel_backend", f"unknown value '{role['cni_flannel_backend']}'; set one of: {', '.join(FLANNEL_BACKENDS)}")
    if cni in ("calico", "cilium") and not str(role["cni_manifest_src"] or "").strip():
        col.error("cni_manifest_src", f"slipway_cni is {cni}: set it to the upstream manifest of the release you want, a "
                  "file on the controller (calico: calico.yaml of the release; cilium: the output of `helm template "
                  "cilium cilium/cilium --namespace kube-system`)")
    lb_port, api_port = endpoint.get("lb_port"), endpoint.get("apiserver_port")
    lb_hosts = endpoint.get("lb_hosts") or []
    beside_apiserver = lb_mode == "local_haproxy" or (lb_mode == "vip" and set(lb_hosts) & set(control_planes))
    if lb_port and api_port and lb_port == api_port and beside_apiserver:
        col.error("slipway_lb_port", f"is {lb_port} like slipway_apiserver_port, but haproxy runs on the control planes "
                  f"next to kube-apiserver ({lb_mode} mode): set slipway_lb_port to another port, e.g. 8443"
                  + (", or put dedicated hosts in the loadbalancer group" if lb_mode == "vip" else ""))
    if lb_mode in ("local_haproxy", "vip"):
        health = integer(col, "loadbalancer_haproxy_health_port", role["loadbalancer_haproxy_health_port"], 1, 65535,
                         "a TCP port; set a number from 1 to 65535")
        if health is not None and health in (lb_port, api_port):
            col.error("loadbalancer_haproxy_health_port", f"is {health}, the port of "
                      f"{'haproxy' if health == lb_port else 'kube-apiserver'}; choose another free TCP port")
    if lb_mode == "vip":
        router_id = integer(col, "loadbalancer_keepalived_virtual_router_id", role["loadbalancer_keepalived_virtual_router_id"],
                            0, 255, "a VRRP router id; set a number from 1 to 255, or 0 to derive it from the virtual IP")
        if isinstance(endpoint, dict) and endpoint.get("vip"):
            # 0: derived from the virtual IP, so clusters beside each other get different ids.
            endpoint["vrrp_router_id"] = router_id or int(hashlib.sha1(endpoint["vip"].encode()).hexdigest()[:8], 16) % 255 + 1
        if len(str(role["loadbalancer_keepalived_auth_pass"] or "")) > 8:
            col.error("loadbalancer_keepalived_auth_pass", "is longer than 8 characters, and VRRP ignores the rest; "
                      "shorten it")
        # Written unquoted into keepalived.conf. Never the value: it is a password.
        if not re.match(r"^[A-Za-z0-9._+=@%^&*,:-]*$", str(role["loadbalancer_keepalived_auth_pass"] or "")):
            col.error("loadbalancer_keepalived_auth_pass", "has a blank, a quote or a character keepalived.conf reads "
                      "as a comment or block ('#', '!', '{', '}'); use letters, digits and . _ + = @ % ^ & * , : -")
        if len(lb_hosts) > 100:
            col.error("group loadbalancer", f"has {len(lb_hosts)} hosts; keepalived takes at most 100")
    _check_registries(col, role)
    _check_hardening(col, role)
    for name in ("node_join_token_ttl", "control_plane_join_token_ttl"):
        ttl = str(role[name]).strip()
        if not ttl or not re.match(r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$", ttl):
            col.error(name, f"'{role[name]}' is not a duration; set one such as 15m or 1h")
    if not str(role["etcd_pki_dir"] or "").startswith("/"):
        col.error("etcd_pki_dir", f"'{role['etcd_pki_dir']}' is not an absolute path; set a directory such as /etc/etcd/pki")
    elif not SAFE_PATH.match(str(role["etcd_pki_dir"])):
        col.error("etcd_pki_dir", f"'{role['etcd_pki_dir']}' has a character a path in etcd's unit and command lines "
                  "cannot hold (blanks, quotes, ;, $, `, ...); set a directory such as /etc/etcd/pki")
    _check_cert_sans(col, role["control_plane_cert_sans"])
    _check_coredns_upstreams(col, role["control_plane_coredns_upstreams"])
    _check_operator(col, role)
    integer(col, "metrics_server_replicas", role["metrics_server_replicas"], 1, 1000, "a number of replicas; set 1 or more")
    types = role["metrics_server_kubelet_preferred_address_types"]
    if not isinstance(types, list) or not types or any(item not in KUBELET_ADDRESS_TYPES for item in types):
        col.error("metrics_server_kubelet_preferred_address_types", f"'{types}' is not a list of "
                  f"{', '.join(KUBELET_ADDRESS_TYPES)}")
    configuration = role["kubesphere_cluster_configuration"]
    merge_type = role["kubesphere_cluster_configuration_merge_type"]
    if not isinstance(configuration, (Mapping, str)):
        col.error("kubesphere_cluster_configuration", f"is a {type(configuration).__name__}; set a mapping (a "
                  "ClusterConfiguration or its spec) or the path of a YAML file on the controller")
    if kubesphere and isinstance(configuration, str) and configuration and reader is not None and hasattr(reader, "yaml_file"):
        _check_cluster_configuration_file(col, configuration, reader)
    if merge_type not in MERGE_TYPES:
        col.error("kubesphere_cluster_configuration_merge_type", f"unknown value '{merge_type}'; set one of: "
                  f"{', '.join(MERGE_TYPES)}")
    elif kubesphere and merge_type == "replace" and not configuration:
        col.error("kubesphere_cluster_configuration", "is empty with kubesphere_cluster_configuration_merge_type "
                  "replace, which would empty the stored spec; give the ClusterConfiguration")


def _check_operator(col: Collector, role: Mapping[str, Any]) -> None:
    """slipway-operator's settings (roles/operator), with or without slipway_operator_enabled: playbooks/operator.yml
    deploys it on any cluster."""
    if role["operator_image_pull_policy"] not in IMAGE_PULL_POLICIES:
        col.error("operator_image_pull_policy", f"unknown value '{role['operator_image_pull_policy']}'; set one of: "
                  f"{', '.join(IMAGE_PULL_POLICIES)}")
    integer(col, "operator_replicas", role["operator_replicas"], 1, 100,
            "a number of replicas; set 1 or more (2: one stands by)")
    integer(col, "operator_metrics_port", role["operator_metrics_port"], 1, 65535, "a TCP port; set a number from 1 to 65535")
    integer(col, "operator_resync_seconds", role["operator_resync_seconds"], 1, 86400 * 7, "a number of seconds; set 1 or more")
    integer(col, "operator_debounce_seconds", role["operator_debounce_seconds"], 0, 3600, "a number of seconds; set 0 or more")
    extra = role["operator_kubesphere_vars"]
    if not isinstance(extra, Mapping):
        col.error("operator_kubesphere_vars", f"is a {type(extra).__name__}; set a mapping of kubesphere_* settings")
    else:
        own = [name for name in OPERATOR_OWN_KUBESPHERE_VARS if name in extra]
        if own:
            col.error("operator_kubesphere_vars", f"sets {', '.join(own)}, which the operator sets itself (its service "
                      "account, the stored ClusterConfiguration); remove them")


def _check_hardening(col: Collector, role: Mapping[str, Any]) -> None:
    """The audit log's limits (the CIS benchmark asks for at least 30 days, 10 files, 100 MB), the
    encryption provider and the pods' process limit."""
    for name, low in (("control_plane_audit_log_maxage", 0), ("control_plane_audit_log_maxbackup", 0),
                      ("control_plane_audit_log_maxsize", 1)):
        integer(col, name, role[name], low, 100000, "a number (days, files or megabytes)")
    if role["control_plane_encryption_provider"] not in ENCRYPTION_PROVIDERS:
        col.error("control_plane_encryption_provider", f"unknown value '{role['control_plane_encryption_provider']}'; "
                  f"set one of: {', '.join(ENCRYPTION_PROVIDERS)}")
    integer(col, "control_plane_kubelet_pod_pids_limit", role["control_plane_kubelet_pod_pids_limit"], -1, 2**22,
            "a number of processes per pod (-1 for no limit)")
    if not isinstance(role["control_plane_audit_policy_src"], str):
        col.error("control_plane_audit_policy_src", "is not a path; give the path of an audit Policy file on the "
                  "controller, or leave it empty for the collection's policy")


def _check_cluster_configuration_file(col: Collector, path: str, reader: BundleReader) -> None:
    """The ClusterConfiguration file the kubesphere role would read only after the cluster was made."""
    data, why = reader.yaml_file(path)
    name = "kubesphere_cluster_configuration"
    if why is not None:
        col.error(name, f"the file {path} {why}; give the path of a ClusterConfiguration YAML file on the controller, "
                  "or the ClusterConfiguration itself as a mapping")
    elif not isinstance(data, Mapping):
        col.error(name, f"the file {path} holds a {type(data).__name__}, not a ClusterConfiguration (a mapping)")
    elif "kind" in data and data["kind"] != "ClusterConfiguration":
        col.error(name, f"the file {path} is a {data['kind']}, not a ClusterConfiguration (installer.kubesphere.io)")
    elif "spec" in data and not isinstance(data["spec"], Mapping):
        col.error(name, f"the file {path} has a spec that is a {type(data['spec']).__name__}, not a mapping")
