# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Kubespray's settings that slipway.cluster does not read, each with ours beside it.

The rule (docs/kubespray.md): a kubespray variable is never read. One whose value is what
slipway.cluster does anyway is accepted without a word, so a kubespray group_vars directory with
kubespray's defaults can stay; one whose value would give a different cluster is an error in the
model's one list, naming our setting and the value to give it (or saying there is none).
Only the variables of ``KUBESPRAY`` are looked at. Pure Python, so every row is a unit test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ansible_collections.slipway.cluster.plugins.module_utils._settings import SUPPORTED_KUBERNETES_MINORS

# A translation: the kubespray value -> the value of ours with the same meaning, or NO_EQUIVALENT.
NO_EQUIVALENT = object()


def _text(value: Any) -> str:
    return str(value).strip()


def _version(value: Any) -> str:
    return _text(value).lstrip("v")


def _number(value: Any) -> Any:
    try:
        return int(str(value).strip())
    except ValueError:
        return _text(value)


def _boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    text = _text(value).lower()
    if text in ("yes", "on", "true", "1", "y", "t"):
        return True
    if text in ("no", "off", "false", "0", "n", "f"):
        return False
    return text


def _unsupported_version(value: Any) -> str | None:
    minor = ".".join(str(value).split(".")[:2])
    if minor in SUPPORTED_KUBERNETES_MINORS:
        return None
    return f"slipway.cluster installs {', '.join(SUPPORTED_KUBERNETES_MINORS)}, not {minor}"


def _cni(value: Any) -> Any:
    return {"flannel": "flannel", "calico": "calico", "cilium": "cilium", "cni": "none"}.get(_text(value), NO_EQUIVALENT)


def _etcd_mode(value: Any) -> Any:
    # kubespray's host / docker / containerd all run etcd as its own service on the etcd group.
    return {"host": "external", "docker": "external", "containerd": "external", "kubeadm": "stacked"}.get(_text(value), NO_EQUIVALENT)


def _etcd_kubeadm(value: Any) -> Any:
    return "stacked" if _boolean(value) is True else "external"


def _strings(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_text(item) for item in value]
    return _text(value)


@dataclass(frozen=True)
class Row:
    """One kubespray variable: ours and how a value translates, or what slipway.cluster always does."""

    ours: str = ""  # our variable with the same meaning; empty when there is none
    translate: Callable[[Any], Any] = _text
    # No variable of ours: the value kubespray would need to set to do what we do, and what we do.
    fixed: Any = None
    does: str = ""
    note: str = ""  # said after the suggestion, e.g. why a value cannot be used
    # Why our setting cannot take the translated value (None: it can), e.g. an unsupported version.
    refuse: Callable[[Any], str | None] = lambda value: None


def _fixed(value: Any, does: str, translate: Callable[[Any], Any] = _boolean) -> Row:
    return Row(fixed=value, does=does, translate=translate)


def _nothing(what: str) -> Row:
    return _fixed(False, f"slipway.cluster installs no {what}")


# The common set: the settings of kubespray's inventory/sample group_vars, and the cluster-wide
# ones its documentation points new users at. docs/kubespray.md has the same table. A name one of
# our roles uses (kubespray's etcd_data_dir is the etcd role's too) is not here: it is ours.
KUBESPRAY: dict[str, Row] = {
    "kube_version": Row("slipway_kubernetes_version", _version, refuse=_unsupported_version),
    "kube_pods_subnet": Row("slipway_pod_cidr"),
    "kube_service_addresses": Row("slipway_service_cidr"),
    "kube_network_node_prefix": Row("slipway_node_cidr_mask_size", _number),
    "kube_network_plugin": Row("slipway_cni", _cni),
    "kube_proxy_mode": Row("control_plane_kube_proxy_mode"),
    "kube_apiserver_port": Row("slipway_apiserver_port", _number),
    # kubespray's cluster_name is the cluster's DNS domain (dns_domain defaults to it).
    "cluster_name": Row("slipway_dns_domain"),
    "dns_domain": Row("slipway_dns_domain"),
    "etcd_deployment_type": Row("slipway_etcd_mode", _etcd_mode),
    "etcd_kubeadm_enabled": Row("slipway_etcd_mode", _etcd_kubeadm),
    "files_repo": Row("slipway_artifacts_mirror_url", note="with slipway_artifacts_source: mirror"),
    "registry_host": Row("slipway_artifacts_registry_mirror"),
    "upstream_dns_servers": Row("control_plane_coredns_upstreams", _strings),
    "supplementary_addresses_in_ssl_keys": Row("control_plane_cert_sans", _strings),
    "loadbalancer_apiserver_healthcheck_port": Row("loadbalancer_haproxy_health_port", _number),
    "containerd_registries_mirrors": Row(
        "containerd_registry_mirrors", lambda value: NO_EQUIVALENT if value else {},
        note="as {registry: [mirror URL, ...]}"),
    "containerd_registries": Row(
        "containerd_registry_mirrors", lambda value: NO_EQUIVALENT if value else {},
        note="as {registry: [mirror URL, ...]}"),
    "containerd_registry_auth": Row(
        "containerd_registry_auths", lambda value: NO_EQUIVALENT if value else {},
        note="as {registry: {username: ..., password: ...}}"),
    # The load balancer and the endpoint are compared as a whole in check(): see _endpoint_rows.
    "loadbalancer_apiserver": Row("slipway_control_plane_endpoint"),
    "apiserver_loadbalancer_domain_name": Row("slipway_control_plane_endpoint"),
    "loadbalancer_apiserver_localhost": Row("slipway_lb_mode"),
    "loadbalancer_apiserver_port": Row("slipway_lb_port", _number),
    "loadbalancer_apiserver_type": _fixed("haproxy", "slipway.cluster's local load balancer is haproxy", _text),
    "container_manager": _fixed("containerd", "slipway.cluster runs containerd", _text),
    "dns_mode": _fixed("coredns", "slipway.cluster runs CoreDNS", _text),
    "kube_image_repo": _fixed("registry.k8s.io", "images keep their names; slipway_artifacts_registry_mirror (one "
                              "registry holding every image) or containerd_registry_mirrors serves them", _text),
    "gcr_image_repo": _fixed("gcr.io", "images keep their names; use containerd_registry_mirrors", _text),
    "docker_image_repo": _fixed("docker.io", "images keep their names; use containerd_registry_mirrors", _text),
    "quay_image_repo": _fixed("quay.io", "images keep their names; use containerd_registry_mirrors", _text),
    "github_image_repo": _fixed("ghcr.io", "images keep their names; use containerd_registry_mirrors", _text),
    "kube_config_dir": _fixed("/etc/kubernetes", "kubeadm's /etc/kubernetes is used", _text),
    "kube_cert_dir": _fixed("/etc/kubernetes/pki", "the certificates stay where kubeadm puts them, /etc/kubernetes/pki",
                            _text),
    "bin_dir": _fixed("/usr/local/bin", "the binaries go to /usr/local/bin", _text),
    "kubeconfig_localhost": _fixed(True, "slipway.cluster always puts admin.conf in <inventory>/artifacts "
                                   "(control_plane_fetch_kubeconfig)"),
    "metrics_server_enabled": _fixed(True, "slipway.cluster always installs metrics-server"),
    "enable_nodelocaldns": _nothing("NodeLocal DNSCache"),
    "kube_proxy_strict_arp": _fixed(False, "kube-proxy's strictARP is not set"),
    "kube_encrypt_secret_data": _fixed(False, "secrets are not encrypted at rest"),
    "enable_dual_stack_networks": _fixed(False, "slipway.cluster builds single-stack clusters"),
    "kube_network_plugin_multus": _nothing("Multus"),
    "kata_containers_enabled": _nothing("Kata Containers"),
    "kubernetes_audit": _fixed(False, "the API server's audit log is not set up"),
    "auto_renew_certificates": Row("control_plane_certs_auto_renew", _boolean),
    "podsecuritypolicy_enabled": _fixed(False, "PodSecurityPolicy does not exist in the supported Kubernetes releases"),
    "persistent_volumes_enabled": _nothing("storage class"),
    "deploy_netchecker": _nothing("netchecker"),
    "dashboard_enabled": _nothing("dashboard"),
    "helm_enabled": _nothing("helm"),
    "registry_enabled": _nothing("registry"),
    "local_path_provisioner_enabled": _nothing("local path provisioner"),
    "local_volume_provisioner_enabled": _nothing("local volume provisioner"),
    "cephfs_provisioner_enabled": _nothing("CephFS provisioner"),
    "rbd_provisioner_enabled": _nothing("RBD provisioner"),
    "ingress_nginx_enabled": _nothing("ingress controller"),
    "ingress_alb_enabled": _nothing("ingress controller"),
    "cert_manager_enabled": _nothing("cert-manager"),
    "metallb_enabled": _nothing("MetalLB"),
    "argocd_enabled": _nothing("Argo CD"),
    "krew_enabled": _nothing("krew"),
    "http_proxy": _fixed("", "slipway.cluster sets no proxy (offline installs use slipway_artifacts_source: bundle)", _text),
    "https_proxy": _fixed("", "slipway.cluster sets no proxy (offline installs use slipway_artifacts_source: bundle)", _text),
}

_ENDPOINT_VARIABLES = ("loadbalancer_apiserver", "apiserver_loadbalancer_domain_name", "loadbalancer_apiserver_localhost",
                       "loadbalancer_apiserver_port")


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'"
    return str(value)


def _endpoint_problems(given: Mapping[str, Any], ours: Mapping[str, Any]) -> list[tuple[str, str]]:
    """kubespray's load balancer settings against slipway_lb_mode, the endpoint and slipway_lb_port."""
    problems = []
    mode = _text(ours.get("slipway_lb_mode"))
    endpoint = _text(ours.get("slipway_control_plane_endpoint") or "")
    external = given.get("loadbalancer_apiserver")
    if external is not None:
        if isinstance(external, Mapping) and external.get("address"):
            wanted = f"{_text(external['address'])}:{_number(external.get('port', 6443))}"
            if mode not in ("external", "vip") or endpoint != wanted:
                problems.append(("loadbalancer_apiserver", f"{_show(wanted)}; slipway.cluster reads slipway_lb_mode "
                                 f"({_show(mode)}) and slipway_control_plane_endpoint ({_show(endpoint)}): set "
                                 f"slipway_lb_mode: external and slipway_control_plane_endpoint: {wanted}"))
        else:
            problems.append(("loadbalancer_apiserver", f"{_show(external)}; slipway.cluster reads slipway_lb_mode and "
                             "slipway_control_plane_endpoint: set slipway_lb_mode: external and "
                             "slipway_control_plane_endpoint: ADDRESS:PORT of your load balancer"))
    name = given.get("apiserver_loadbalancer_domain_name")
    if name is not None and _text(name) and _text(name) != endpoint.rsplit(":", 1)[0]:
        problems.append(("apiserver_loadbalancer_domain_name", f"{_show(name)}; slipway.cluster reads "
                         f"slipway_control_plane_endpoint ({_show(endpoint)}): set slipway_lb_mode: external and "
                         f"slipway_control_plane_endpoint: {_text(name)}:PORT"))
    localhost = given.get("loadbalancer_apiserver_localhost")
    if localhost is not None and _boolean(localhost) != (mode == "local_haproxy"):
        suggestion = "local_haproxy" if _boolean(localhost) is True else "vip or external"
        problems.append(("loadbalancer_apiserver_localhost", f"{_show(_boolean(localhost))}; slipway.cluster reads "
                         f"slipway_lb_mode ({_show(mode)}): set slipway_lb_mode: {suggestion}"))
    port = given.get("loadbalancer_apiserver_port")
    if port is not None and mode == "local_haproxy" and _number(port) != _number(ours.get("slipway_lb_port")):
        problems.append(("loadbalancer_apiserver_port", f"{_show(_number(port))}; slipway.cluster's local haproxy "
                         f"listens on slipway_lb_port ({_show(_number(ours.get('slipway_lb_port')))}) on every node, "
                         "control planes included, so it must differ from slipway_apiserver_port: remove "
                         "loadbalancer_apiserver_port, or set slipway_lb_port to a free port"))
    return problems


def check(given: Mapping[str, Any], ours: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[str]]:
    """Compare kubespray's variables that are set with the effective settings of ours.

    ``given``: the kubespray variables set (name -> value, templated); ``ours``: every setting of
    ours the rows name, with defaults. Returns (problems as (variable, message), names accepted
    because they do what slipway.cluster does).
    """
    problems: list[tuple[str, str]] = []
    accepted: list[str] = []
    for name, value in given.items():
        row = KUBESPRAY.get(name)
        if row is None or name in _ENDPOINT_VARIABLES:
            continue
        translated = row.translate(value)
        if not row.ours:
            if translated == row.fixed:
                accepted.append(name)
            else:
                problems.append((name, f"{_show(value)} is kubespray's and is not read; {row.does}, "
                                 f"which is {name}: {_show(row.fixed)}: remove {name}"))
            continue
        current = ours.get(row.ours)
        if translated is NO_EQUIVALENT:
            problems.append((name, f"{_show(value)} is kubespray's and is not read; slipway.cluster reads {row.ours} "
                             f"({_show(current)}), which has no equivalent of it{', ' + row.note if row.note else ''}: "
                             f"set {row.ours} and remove {name}"))
            continue
        if row.ours == "slipway_artifacts_mirror_url":
            same = translated.rstrip("/") == _text(current or "").rstrip("/") and ours.get("slipway_artifacts_source") == "mirror"
        else:
            same = _normal(translated) == _normal(current)
        if same:
            accepted.append(name)
            continue
        note = f" ({row.note})" if row.note else ""
        refused = row.refuse(translated)
        if refused:
            problems.append((name, f"{_show(value)} is kubespray's and is not read; slipway.cluster reads {row.ours} "
                             f"({_show(current)}) and {refused}: set {row.ours} to one of those and remove {name}"))
            continue
        problems.append((name, f"{_show(value)} is kubespray's and is not read; slipway.cluster reads {row.ours} "
                         f"({_show(current)}): set {row.ours}: {_yaml(translated)}{note} and remove {name}"))
    names = set(given)
    for name, message in _endpoint_problems(given, ours):
        problems.append((name, f"{message.split(';', 1)[0]} is kubespray's and is not read;{message.split(';', 1)[1]}"
                         f"{'' if 'remove ' + name in message else ' and remove ' + name}"))
        names.discard(name)
    accepted.extend(name for name in _ENDPOINT_VARIABLES if name in names)
    order = list(KUBESPRAY)
    return sorted(problems, key=lambda problem: order.index(problem[0])), sorted(accepted)


def _normal(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple)):
        return [_normal(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): _normal(v) for k, v in value.items()}
    return _number(value) if str(value).strip().isdigit() else _text(value).lstrip("v") if _looks_versioned(value) else _text(value)


def _looks_versioned(value: Any) -> bool:
    text = _text(value)
    return text.startswith("v") and text[1:2].isdigit()


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(item) for item in value) + "]"
    return str(value)
