# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The validated cluster model.

Turns the inventory (groups and host variables) and the cluster-wide ``slipway_*``
settings into one normalized model of the cluster, or into the complete list of
problems that stop the run. Pure Python: no Ansible, no network, so every bad
input is a unit test.
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import re
from typing import Any, Mapping, Protocol

from ansible_collections.slipway.cluster.plugins.module_utils import _artifacts as artifacts
from ansible_collections.slipway.cluster.plugins.module_utils import _kubespray as kubespray
from ansible_collections.slipway.cluster.plugins.module_utils._artifacts import KUBERNETES_RELEASES
from ansible_collections.slipway.cluster.plugins.module_utils._kubespray import KUBESPRAY
from ansible_collections.slipway.cluster.plugins.module_utils._problems import Collector, ModelError
from ansible_collections.slipway.cluster.plugins.module_utils._settings import (
    ARTIFACT_SOURCES,
    CNIS,
    DEFAULT_SETTINGS,
    ENCRYPTION_PROVIDERS,
    ETCD_MODES,
    FLANNEL_BACKENDS,
    GROUP_CONTROL_PLANE,
    GROUP_ETCD,
    GROUP_K8S_CLUSTER,
    GROUP_LB,
    GROUP_NODE,
    HARDENING,
    IMAGE_PULL_POLICIES,
    KUBELET_ADDRESS_TYPES,
    KUBE_PROXY_MODES,
    LB_MODES,
    MERGE_TYPES,
    OPERATOR_OWN_KUBESPHERE_VARS,
    OWN_PREFIXES,
    OWN_VARIABLES,
    ROLE_VARIABLE_NAMES,
    SUPPORTED_KUBERNETES_MINORS,
    role_defaults,
)

# Kubernetes node names are RFC 1123 DNS subdomains.
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_HOSTNAME = _NODE_NAME
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


def parse_version(value: Any) -> tuple[int, int, int] | None:
    match = _VERSION.match(str(value).strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def _ip(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return _address(value)
    except ValueError:
        return None


def _address(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address checked already (the nodes' addresses): raises ValueError when it is none."""
    return ipaddress.ip_address(str(value).strip())


# One DNS label (RFC 1123), lowercase: what Kubernetes and certificates take.
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# A DNS name is at most 253 characters (RFC 1035, without the final dot), each label at most 63.
DNS_NAME_MAX = 253
DNS_LABEL_MAX = 63
# Node names: a Linux host name (at most 64 characters) and a Kubernetes node name (labels of at most 63).
NODE_NAME_MAX = 63
# The cluster's name: in kubeadm's clusterName, the kubeconfig contexts and the etcd snapshots' file names
# (etcd-NAME-YYYYMMDDTHHMMSSZ.db.sha256, well below a file name's 255 bytes at this length).
CLUSTER_NAME_MAX = 63
# The API server's certificate names kubernetes.default.svc.DOMAIN, a DNS name of at most 253 characters.
_SERVICE_FQDN_PREFIX = "kubernetes.default.svc."
# kubespray's older group names, and what they are called now.
OLD_GROUPS = {
    "kube-master": GROUP_CONTROL_PLANE,
    "kube_master": GROUP_CONTROL_PLANE,
    "kube-node": GROUP_NODE,
    "k8s-cluster": GROUP_K8S_CLUSTER,
    "calico-rr": "calico_rr",
}
# A path written into a configuration file or a command line: no blank, quote or shell character.
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._/@%+=,:-]*$")
# A registry as containerd names its directory under certs.d: host[:port] (or containerd's _default).
_REGISTRY_HOST = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def dns_name_problem(name: Any, max_length: int = DNS_NAME_MAX, wildcard: bool = False) -> str | None:
    """Why ``name`` is not a DNS name (RFC 1123 labels, lowercase or not), or None when it is one.
    ``wildcard``: a leading ``*.`` is allowed (a certificate's SAN)."""
    text = name.lower() if isinstance(name, str) else ""
    if not text:
        return "is empty" if isinstance(name, str) else f"is a {type(name).__name__}, not a name"
    if len(text) > max_length:
        return f"is {len(text)} characters long, more than the {max_length} allowed"
    if wildcard and text.startswith("*."):
        text = text[2:]
    for label in text.split("."):
        if len(label) > DNS_LABEL_MAX:
            return f"has a label of {len(label)} characters ('{label[:16]}...'), more than DNS's {DNS_LABEL_MAX}"
        if not _LABEL.match(label):
            return "is not a DNS name (letters, digits and '-' in labels separated by '.')"
    return None


def address_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address cannot be a node's (or a virtual IP): no host is reached at it. None when it can."""
    if address.is_unspecified:
        return "is the unspecified address, which means 'any' and is no host's own"
    if address.is_multicast:
        return "is a multicast address, which is a group's and no host's own"
    if address.version == 4 and address == ipaddress.IPv4Address("255.255.255.255"):
        return "is the broadcast address, which reaches every host and is no host's own"
    if address.version == 4 and address in ipaddress.ip_network("240.0.0.0/4"):
        return "is in 240.0.0.0/4, reserved and not routed"
    return None


def _bad_values(values: list[Any]) -> str:
    return ", ".join(repr(str(value)) if isinstance(value, str) else repr(value) for value in values)


def _group(groups: Mapping[str, Any], name: str) -> list[str]:
    return list(groups.get(name) or [])


def _parse_cidr(col: Collector, var: str, value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    text = str(value or "").strip()
    try:
        return ipaddress.ip_network(text, strict=True)
    except ValueError:
        pass
    try:
        loose = ipaddress.ip_network(text, strict=False)
    except ValueError:
        col.error(var, f"'{text}' is not a network in CIDR notation; set it like 10.233.64.0/18")
        return None
    col.error(var, f"'{text}' has host bits set; set it to the network address {loose}")
    return None


def _parse_endpoint(text: str, default_port: int) -> tuple[str, int | None]:
    """Split ``host[:port]`` (IPv6 as ``[addr]:port``); port None when it is not a number."""
    text = text.strip()
    if text.startswith("["):
        host, dummy, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, dummy, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not port_text:
        return host, default_port
    if port_text.isdigit() and 0 < int(port_text) < 65536:
        return host, int(port_text)
    return host, None


_TRUE = ("yes", "on", "true", "1", "y", "t")
_FALSE = ("no", "off", "false", "0", "n", "f")


def _bool(col: Collector, var: str, value: Any) -> bool:
    """Booleans as Ansible reads them: true/false, yes/no, on/off, 1/0."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    col.error(var, f"'{value}' is not a boolean; set true or false")
    return False


def _port(col: Collector, var: str, value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = 0
    if not 0 < port < 65536 or isinstance(value, bool):
        col.error(var, f"'{value}' is not a TCP port; set a number from 1 to 65535")
        return 0
    return port


def _choice(col: Collector, var: str, value: Any, choices: tuple[str, ...]) -> str:
    if value in choices:
        return str(value)
    col.error(var, f"unknown value '{value}'; set one of: {', '.join(choices)}")
    return ""


def _node_address(col: Collector, host: str, hostvars: Mapping[str, Any]) -> str:
    """The address Kubernetes binds to: ``ip``, else ``ansible_host`` when it is an IP."""
    if hostvars.get("ip"):
        address = _ip(hostvars["ip"])
        if address is None:
            col.error(f"host {host}", f"ip '{hostvars['ip']}' is not an IP address; set ip: to the node's IPv4 address")
            return ""
        return _usable_address(col, host, "ip", address)
    ansible_host = hostvars.get("ansible_host")
    address = _ip(ansible_host) if ansible_host else None
    if address is not None:
        return _usable_address(col, host, "ansible_host", address)
    if ansible_host:
        col.error(
            f"host {host}",
            f"ansible_host '{ansible_host}' is not an IP address and ip is not set; "
            "set ip: to the address Kubernetes should use on this node",
        )
    else:
        col.error(f"host {host}", "has neither ip nor ansible_host; set ip: to the node's IPv4 address")
    return ""


def _usable_address(col: Collector, host: str, var: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    why = address_problem(address)
    if why:
        col.error(f"host {host}", f"{var} {address} {why}; set ip: to the node's own unicast address, e.g. "
                  f"{'192.0.2.11' if address.version == 4 else '2001:db8::11'}")
        return ""
    return str(address)


def _check_names(col: Collector, hosts: list[str]) -> None:
    seen: dict[str, str] = {}
    for host in hosts:
        if not _NODE_NAME.match(host):
            col.error(
                f"host {host}",
                "is not a valid Kubernetes node name (lowercase letters, digits, '-' and '.'); "
                "rename it in the inventory",
            )
        elif len(host) > NODE_NAME_MAX:
            col.error(f"host {host}", f"is {len(host)} characters long: it becomes the node's Linux host name (at most "
                      f"64) and its Kubernetes node name (labels of at most 63); rename it in the inventory to at most "
                      f"{NODE_NAME_MAX} characters")
        key = host.lower()
        if key in seen:
            col.error(f"host {host}", f"has the same hostname as host {seen[key]}; give each node a unique name")
        else:
            seen[key] = host


def _check_addresses(col: Collector, addresses: dict[str, str]) -> None:
    owners: dict[str, str] = {}
    for host, address in addresses.items():
        if not address:
            continue
        if address in owners:
            col.error(f"host {host}", f"has the same address {address} as host {owners[address]}; give each node its own ip")
        else:
            owners[address] = host


def _check_etcd(col: Collector, mode: str, control_planes: list[str], etcd_group: list[str],
                even_ok: bool = False) -> list[str]:
    if mode == "stacked":
        members = control_planes
        if etcd_group and set(etcd_group) != set(control_planes):
            col.error(
                "group etcd",
                "stacked etcd runs on the control planes, but the etcd group lists "
                f"{', '.join(sorted(etcd_group))}; make it equal to kube_control_plane "
                "or set slipway_etcd_mode: external",
            )
    else:
        members = etcd_group
        if not members:
            col.error("group etcd", "slipway_etcd_mode is external but the etcd group has no host; add 1, 3 or 5 hosts")
    # An even count tolerates no more failures than one member less, and a split into halves leaves neither
    # side a quorum. A replacement passes through one (add the new member, then remove the old): the user says
    # so with slipway_etcd_even_members_ok, and the model of a removal (``even_ok``) only warns.
    if members and len(members) % 2 == 0:
        count = len(members)
        where = "group etcd" if mode == "external" else "group kube_control_plane"
        why = (f"etcd has {count} members: quorum is {count // 2 + 1} of {count}, so it survives no more failures "
               f"than {count - 1} member{'s' if count > 2 else ''} would and a split into halves stops it")
        if even_ok:
            col.warn(where, f"{why}; use {count - 1} or {count + 1} (add or remove one)")
        else:
            col.error(where, f"{why}; use {count - 1} or {count + 1} "
                      f"{'etcd hosts' if mode == 'external' else 'control planes'}, or set "
                      "slipway_etcd_even_members_ok: true if you mean it (e.g. for the step between adding a new "
                      "member and removing the old one)")
    return members


def _check_networks(col, pod, service, node_mask, addresses, node_count, vip):
    if pod is not None and service is not None and pod.version == service.version and pod.overlaps(service):
        col.error("slipway_pod_cidr", f"{pod} overlaps slipway_service_cidr {service}; choose ranges that do not overlap")
    # Single-stack clusters: the networks and the nodes' addresses are of one address family. Every setting
    # of the wrong family is named, not only the first.
    node_families = {_address(address).version for address in addresses.values() if address}
    if len(node_families) == 1:
        nodes_family = node_families.pop()
        examples = {("slipway_pod_cidr", 4): "10.233.64.0/18", ("slipway_pod_cidr", 6): "fd00:10:233::/56",
                    ("slipway_service_cidr", 4): "10.233.0.0/18", ("slipway_service_cidr", 6): "fd00:10:96::/108"}
        for var, net in (("slipway_pod_cidr", pod), ("slipway_service_cidr", service)):
            if net is not None and net.version != nodes_family:
                col.error(var, f"{net} is IPv{net.version} but the nodes' addresses are IPv{nodes_family}; a "
                          f"single-stack cluster uses one address family: set an IPv{nodes_family} range, e.g. "
                          f"{examples[(var, nodes_family)]}")
        return _check_network_sizes(col, pod, service, node_mask, addresses, node_count, vip)
    if pod is not None and service is not None and pod.version != service.version:
        col.error("slipway_service_cidr", f"{service} is IPv{service.version} but slipway_pod_cidr {pod} is IPv{pod.version}; "
                  "a single-stack cluster uses one address family: choose both of the nodes' family")
    family = service.version if service is not None else pod.version if pod is not None else None
    other = sorted(host for host, address in addresses.items() if address and family and _address(address).version != family)
    if other:
        col.error("slipway_service_cidr" if service is not None else "slipway_pod_cidr",
                  f"is IPv{family} but the address of host {', '.join(other)} is not; a single-stack cluster uses one "
                  "address family: give the nodes addresses of the networks' family (ip:) or change the networks")
    return _check_network_sizes(col, pod, service, node_mask, addresses, node_count, vip)


def _check_network_sizes(col, pod, service, node_mask, addresses, node_count, vip):
    for var, net in (("slipway_pod_cidr", pod), ("slipway_service_cidr", service)):
        if net is None:
            continue
        inside = [f"{host} ({address})" for host, address in sorted(addresses.items()) if address and _ip(address) in net]
        if inside:
            col.error(var, f"{net} contains the address of host {', '.join(inside)}; choose a range outside the nodes' network")
        if vip is not None and vip in net:
            col.error(var, f"{net} contains the control plane endpoint {vip}; choose a range outside the nodes' network")
    if service is not None and service.version == 4 and service.prefixlen < 12:
        col.error("slipway_service_cidr", f"{service} is larger than the API server accepts; use a prefix of /12 or longer")
    # kube-apiserver refuses an IPv6 service range of more than 20 host bits.
    if service is not None and service.version == 6 and service.prefixlen < 108:
        col.error("slipway_service_cidr", f"{service} is larger than the API server accepts for IPv6 (at most 20 host "
                  "bits); use a prefix of /108 or longer, e.g. fd00:10:96::/108")
    # The cluster's own Service addresses: the API server's (.1) and CoreDNS's (.10) are taken from the range.
    if service is not None and service.num_addresses <= 10:
        col.error("slipway_service_cidr", f"{service} has {service.num_addresses} addresses and cannot hold the API "
                  f"server's Service address {service.network_address + 1} and the cluster DNS address "
                  f"{service.network_address + 10}; use a prefix of /{service.max_prefixlen - 4} or shorter "
                  "(/24 or shorter leaves room for the cluster's Services)")
    if pod is not None and isinstance(node_mask, int):
        # kube-controller-manager: each node's range is inside the pod range, at most 16 bits longer.
        longest = 30 if pod.version == 4 else 126
        example = 24 if pod.version == 4 else 64
        if node_mask <= pod.prefixlen or node_mask > longest:
            col.error(
                "slipway_node_cidr_mask_size",
                f"{node_mask} must be longer than slipway_pod_cidr's /{pod.prefixlen} and at most {longest} "
                f"(IPv{pod.version}); set it like {max(example, pod.prefixlen + 1)}",
            )
        elif node_mask - pod.prefixlen > 16:
            col.error(
                "slipway_node_cidr_mask_size",
                f"/{node_mask} is {node_mask - pod.prefixlen} bits longer than slipway_pod_cidr's /{pod.prefixlen}; "
                f"kube-controller-manager allows at most 16: set it to {pod.prefixlen + 16} or shorter, or use a "
                "smaller pod range",
            )
        else:
            capacity = 2 ** (node_mask - pod.prefixlen)
            if capacity < node_count:
                col.error(
                    "slipway_pod_cidr",
                    f"{pod} holds {capacity} node ranges of /{node_mask} but the cluster has "
                    f"{node_count} nodes; use a larger range",
                )


def _endpoint(col, mode, settings, control_planes, addresses, lb_hosts):
    """Where kubeadm, kubelets and kubeconfigs reach the API servers."""
    raw = str(settings.get("slipway_control_plane_endpoint") or "").strip()
    scheme = _SCHEME.match(raw)
    if scheme and mode in ("vip", "external"):
        # kubeadm's controlPlaneEndpoint is host[:port]: the URL's address is what it means.
        written, raw = raw, raw[scheme.end():].split("/", 1)[0]
        col.error("slipway_control_plane_endpoint", f"'{written}' is a URL; drop the scheme ({scheme.group(0)}) and "
                  f"any path: set it to {raw or 'ADDRESS[:PORT]'}")
    lb_port = _port(col, "slipway_lb_port", settings.get("slipway_lb_port"))
    api_port = _port(col, "slipway_apiserver_port", settings.get("slipway_apiserver_port"))
    first_cp = control_planes[0] if control_planes else ""
    endpoint: dict[str, Any] = {"mode": mode, "lb_port": lb_port, "apiserver_port": api_port, "vip": ""}
    if mode == "local_haproxy":
        if raw:
            col.error(
                "slipway_control_plane_endpoint",
                "is only used with slipway_lb_mode vip or external; remove it or change slipway_lb_mode",
            )
        endpoint.update(host="127.0.0.1", port=lb_port, external_host=addresses.get(first_cp, ""), external_port=api_port)
        endpoint["lb_hosts"] = []
    elif mode == "vip":
        host, port = _parse_endpoint(raw, lb_port)
        vip = _ip(host)
        if not raw:
            col.error("slipway_control_plane_endpoint", "slipway_lb_mode is vip: set it to the virtual IP, e.g. 10.0.0.250")
        elif vip is None:
            col.error("slipway_control_plane_endpoint", f"'{host}' is not an IP address; the vip mode needs a virtual IP")
        elif address_problem(vip):
            col.error("slipway_control_plane_endpoint", f"{vip} {address_problem(vip)}; choose an unused unicast "
                      "address of the load balancers' network for the virtual IP")
        elif str(vip) in addresses.values():
            owner = next(h for h, a in addresses.items() if a == str(vip))
            col.error("slipway_control_plane_endpoint", f"{vip} is host {owner}'s address; choose an unused address for the virtual IP")
        if port is None:
            col.error("slipway_control_plane_endpoint", f"'{raw}' has an invalid port; use ADDRESS or ADDRESS:PORT")
        endpoint.update(host=str(vip or host), port=port or lb_port, external_host=str(vip or host),
                        external_port=port or lb_port, vip=str(vip or ""), lb_hosts=lb_hosts or list(control_planes))
    elif mode == "external":
        host, port = _parse_endpoint(raw, api_port)
        if not raw:
            col.error("slipway_control_plane_endpoint", "slipway_lb_mode is external: set it to your load balancer's address[:port]")
        elif _ip(host) is None and dns_name_problem(host):
            col.error("slipway_control_plane_endpoint", f"'{host[:80]}' is neither an IP address nor a DNS name: it "
                      f"{dns_name_problem(host)}; set your load balancer's address[:port], e.g. lb.example.com:6443")
        elif (endpoint_ip := _ip(host)) is not None and address_problem(endpoint_ip):
            col.error("slipway_control_plane_endpoint", f"{endpoint_ip} {address_problem(endpoint_ip)}; set your load "
                      "balancer's own address[:port]")
        if port is None:
            col.error("slipway_control_plane_endpoint", f"'{raw}' has an invalid port; use ADDRESS or ADDRESS:PORT")
        endpoint.update(host=host, port=port or api_port, external_host=host, external_port=port or api_port, lb_hosts=[])
    else:
        endpoint.update(host="", port=0, external_host="", external_port=0, lb_hosts=[])
    endpoint["address"] = _join_host_port(endpoint["host"], endpoint["port"])
    endpoint["url"] = f"https://{endpoint['address']}"
    endpoint["external_url"] = f"https://{_join_host_port(endpoint['external_host'], endpoint['external_port'])}"
    return endpoint


def _join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class BundleReader(Protocol):
    """How the model reads a bundle directory; the action plugin gives a real one, tests a fake."""

    def manifest(self, bundle_dir: str) -> Mapping[str, Any] | None:
        """The parsed manifest.yml of the bundle, or None when there is none."""

    def checksum(self, path: str) -> str | None:
        """The sha256 of a file, or None when it does not exist."""

    def yaml_file(self, path: str) -> tuple[Any, str | None]:
        """A YAML file on the controller, found where lookup('file') finds it: (its data, None), or
        (None, why it cannot be read)."""

    # Optional: ``url_exists(url)``, True or False when the controller reached the URL's server, None when it
    # did not. With it the model asks a mirror whether it has the release (slipway_artifacts_source mirror).


def _artifacts(col: Collector, settings: Mapping[str, Any], source: str, version: str, bundle: BundleReader | None):
    if not source or not version:
        return {}
    if source == "bundle":
        bundle_dir = str(settings.get("slipway_artifacts_bundle_dir") or "")
        if not bundle_dir:
            col.error("slipway_artifacts_bundle_dir", "slipway_artifacts_source is bundle: set it to the bundle directory on the controller")
            return {}
        if bundle is None:
            col.error("slipway_artifacts_bundle_dir", f"{bundle_dir} cannot be read here")
            return {}
        result, problems = artifacts.from_bundle(bundle.manifest(bundle_dir), bundle_dir, version, bundle.checksum)
    else:
        mirror_url = str(settings.get("slipway_artifacts_mirror_url") or "")
        # The mirror is asked (from the controller, by the action plugin) only when its URL is one.
        url_exists = getattr(bundle, "url_exists", None) if _URL.match(mirror_url.strip()) else None
        result, problems = artifacts.from_release(
            version, source, mirror_url=mirror_url, registry=str(settings.get("slipway_artifacts_registry_mirror") or ""),
            url_exists=url_exists, warnings=col.warnings,
        )
    col.problems.extend(problems)
    return result


def _check_optional_images(col: Collector, artifacts: Mapping[str, Any], source: str, kubesphere: Any, operator: Any) -> None:
    """A bundle built without the images only some clusters run (tools/bundle's --without, which make lab passes): a
    cluster that runs them is refused, naming the build that adds them."""
    images = artifacts.get("images") or {}
    if source != "bundle" or not images:
        return
    if kubesphere and not any(image.get("kubesphere_only") for image in images.values()):
        col.error("slipway_kubesphere_enabled", f"is true but the bundle at {artifacts.get('bundle_dir')} has no KubeSphere "
                  "monitoring images (built with --without kubesphere); build it with them: make bundle, or "
                  "python3 tools/bundle/build.py without --without kubesphere")
    if operator and "slipway-operator" not in images:
        col.error("slipway_operator_enabled", f"is true but the bundle at {artifacts.get('bundle_dir')} has no "
                  "slipway-operator image (built with --without operator); build it with it: make bundle, or "
                  "python3 tools/bundle/build.py without --without operator")


def _check_setting_names(col: Collector, settings: Mapping[str, Any]) -> None:
    """Every slipway_* variable is a setting (or the lab's own); a misspelt one names the nearest."""
    # Compared without the common prefix, which would make every name look alike.
    known = {name[len("slipway_"):]: name for name in DEFAULT_SETTINGS}
    for name in sorted(settings):
        if not name.startswith("slipway_") or name in DEFAULT_SETTINGS or name in OWN_VARIABLES or name.startswith(OWN_PREFIXES):
            continue
        close = difflib.get_close_matches(name[len("slipway_"):], list(known), n=1, cutoff=0.6)
        hint = f"did you mean {known[close[0]]}?" if close else "the settings are listed in docs/preflight.md"
        col.error(name, f"is not a setting of slipway.cluster; {hint}")


def _int(col: Collector, var: str, value: Any, low: int, high: int, expected: str) -> int | None:
    """A whole number from low to high; a number written as a string (-e, INI files) is a number."""
    if isinstance(value, bool):
        value = None
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        number = None
    if number is None or not low <= number <= high:
        col.error(var, f"'{value}' is not {expected}")
        return None
    return number


# A host name or IPv4 address, an optional port and a path of the characters RFC 3986 allows, without quotes (the
# URLs are written into containerd's hosts.toml and the artifacts' download tasks).
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._~!$&()*+,;=:@%/-]*)?$")


def _check_url(col: Collector, var: str, value: Any, example: str) -> None:
    if not isinstance(value, str) or not _URL.match(value.strip()):
        col.error(var, f"'{value}' is not an http:// or https:// URL; set it like {example}")


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
                _check_url(col, var, url, "https://mirror.example:5000")
        bad = [registry for registry in mirrors if not _registry_host(registry)]
        if bad:
            col.error("containerd_registry_mirrors", f"has the key(s) {_bad_values(bad)}, not registry hosts: each "
                      "key names a directory under /etc/containerd/certs.d; write host[:port] without a scheme or path, "
                      "like docker.io or registry.example:5000 (or _default)")
    insecure = role["containerd_insecure_registries"]
    if not isinstance(insecure, list) or not all(isinstance(item, str) and item.strip() for item in insecure):
        col.error("containerd_insecure_registries", f"'{insecure}' is not a list of registry hosts (host[:port])")
    else:
        bad = [registry for registry in insecure if not _registry_host(registry)]
        if bad:
            col.error("containerd_insecure_registries", f"{_bad_values(bad)} not registry hosts; write host[:port] "
                      "without a scheme or path, like registry.example:5000")
    auths = role["containerd_registry_auths"]
    if isinstance(auths, Mapping):
        bad = [registry for registry in auths if not _registry_host(registry)]
        if bad:
            col.error("containerd_registry_auths", f"has the key(s) {_bad_values(bad)}, not registry hosts; write "
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
    bad = [san for san in sans if not (isinstance(san, str) and _ip(san) is not None and san.strip() == san)
           and dns_name_problem(san, wildcard=True)]
    if bad:
        col.error("control_plane_cert_sans", f"{_bad_values(bad)} {'is' if len(bad) == 1 else 'are'} neither a DNS "
                  "name nor an IP address, which is all a certificate's subject alternative name holds; write each as "
                  "a DNS name (api.example.com, *.example.com) or an IP address (192.0.2.10)")


def _coredns_upstream(value: Any) -> bool:
    """One of CoreDNS's forward destinations as the role writes them: IP, IP:port, [IPv6]:port, or a resolv.conf path."""
    if not isinstance(value, str) or value != value.strip() or not value:
        return False
    if value.startswith("/"):
        return bool(_SAFE_PATH.match(value))
    if _ip(value) is not None:
        return True
    host, port = _parse_endpoint(value, 53)
    bracketed = value.startswith("[") or value.count(":") == 1
    return bracketed and port is not None and _ip(host) is not None


def _check_coredns_upstreams(col: Collector, upstreams: Any) -> None:
    if not isinstance(upstreams, list):
        col.error("control_plane_coredns_upstreams", f"is a {type(upstreams).__name__}; set a list of resolvers, like "
                  "[192.0.2.53, '192.0.2.54:5353'], or [] to answer inside the cluster only")
        return
    bad = [upstream for upstream in upstreams if not _coredns_upstream(upstream)]
    if bad:
        col.error("control_plane_coredns_upstreams", f"{_bad_values(bad)} {'is' if len(bad) == 1 else 'are'} not a "
                  "resolver CoreDNS forwards to; write each as an IP address with an optional port (192.0.2.53, "
                  "192.0.2.53:5353, [2001:db8::53]:53) or the path of a resolv.conf on the nodes (/etc/resolv.conf)")


def _check_roles(col: Collector, role: Mapping[str, Any], lb_mode: str, cni: str, kubesphere: bool,
                 endpoint: Mapping[str, Any], control_planes: list[str], reader: BundleReader | None = None) -> None:
    """The role variables whose mistakes the roles would otherwise find only after hosts changed."""
    if role["control_plane_kube_proxy_mode"] not in KUBE_PROXY_MODES:
        col.error("control_plane_kube_proxy_mode", f"unknown value '{role['control_plane_kube_proxy_mode']}'; "
                  f"set one of: {', '.join(KUBE_PROXY_MODES)}")
    conntrack = role["control_plane_kube_proxy_conntrack_max_per_core"]
    if str(conntrack).strip() != "auto":
        _int(col, "control_plane_kube_proxy_conntrack_max_per_core", conntrack, 0, 2**31 - 1,
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
        health = _int(col, "loadbalancer_haproxy_health_port", role["loadbalancer_haproxy_health_port"], 1, 65535,
                      "a TCP port; set a number from 1 to 65535")
        if health is not None and health in (lb_port, api_port):
            col.error("loadbalancer_haproxy_health_port", f"is {health}, the port of "
                      f"{'haproxy' if health == lb_port else 'kube-apiserver'}; choose another free TCP port")
    if lb_mode == "vip":
        router_id = _int(col, "loadbalancer_keepalived_virtual_router_id", role["loadbalancer_keepalived_virtual_router_id"],
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
    elif not _SAFE_PATH.match(str(role["etcd_pki_dir"])):
        col.error("etcd_pki_dir", f"'{role['etcd_pki_dir']}' has a character a path in etcd's unit and command lines "
                  "cannot hold (blanks, quotes, ;, $, `, ...); set a directory such as /etc/etcd/pki")
    _check_cert_sans(col, role["control_plane_cert_sans"])
    _check_coredns_upstreams(col, role["control_plane_coredns_upstreams"])
    _check_operator(col, role)
    _int(col, "metrics_server_replicas", role["metrics_server_replicas"], 1, 1000, "a number of replicas; set 1 or more")
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
    _int(col, "operator_replicas", role["operator_replicas"], 1, 100, "a number of replicas; set 1 or more (2: one "
         "stands by)")
    _int(col, "operator_metrics_port", role["operator_metrics_port"], 1, 65535, "a TCP port; set a number from 1 to 65535")
    _int(col, "operator_resync_seconds", role["operator_resync_seconds"], 1, 86400 * 7, "a number of seconds; set 1 or more")
    _int(col, "operator_debounce_seconds", role["operator_debounce_seconds"], 0, 3600, "a number of seconds; set 0 or more")
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
        _int(col, name, role[name], low, 100000, "a number (days, files or megabytes)")
    if role["control_plane_encryption_provider"] not in ENCRYPTION_PROVIDERS:
        col.error("control_plane_encryption_provider", f"unknown value '{role['control_plane_encryption_provider']}'; "
                  f"set one of: {', '.join(ENCRYPTION_PROVIDERS)}")
    _int(col, "control_plane_kubelet_pod_pids_limit", role["control_plane_kubelet_pod_pids_limit"], -1, 2**22,
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


def _check_kubespray(col: Collector, given: Mapping[str, Any], effective: Mapping[str, Any]) -> list[str]:
    problems, accepted = kubespray.check(given, effective)
    for name, message in problems:
        col.error(name, message)
    return accepted


_PRERELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)[-+](\S+)$")


def _prerelease_message(text: str, match: re.Match) -> str:
    minor = f"{match.group(1)}.{match.group(2)}"
    if minor in KUBERNETES_RELEASES:
        release = f"{minor}.{KUBERNETES_RELEASES[minor]}"
    else:
        newest = SUPPORTED_KUBERNETES_MINORS[-1]
        release = f"{newest}.{KUBERNETES_RELEASES.get(newest, 0)}"
    return (f"'{text}' is a pre-release or build ({match.group(4)}) of {minor}.{match.group(3)}; slipway.cluster "
            f"installs released versions only: set a release such as {release}")


def _check_names_of_the_cluster(col: Collector, settings: Mapping[str, Any]) -> None:
    """The DNS domain and the cluster's name, against the limits of what takes them."""
    domain = settings["slipway_dns_domain"]
    longest = DNS_NAME_MAX - len(_SERVICE_FQDN_PREFIX)
    why = dns_name_problem(domain)
    if why and why.startswith("has a label"):
        col.error("slipway_dns_domain", f"'{str(domain)[:80]}' {why}; set a DNS domain like cluster.local")
    elif why and "characters long" not in why:
        col.error("slipway_dns_domain", f"'{str(domain)[:80]}' is not a DNS domain; set it like cluster.local")
    elif len(str(domain).strip()) > longest:
        col.error("slipway_dns_domain", f"is {len(str(domain).strip())} characters long; the API server's certificate "
                  f"names {_SERVICE_FQDN_PREFIX}DOMAIN, which DNS limits to {DNS_NAME_MAX}: use at most {longest} "
                  "characters, like cluster.local")
    name = str(settings["slipway_cluster_name"])
    if not re.match(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$", name):
        col.error("slipway_cluster_name", f"'{name[:80]}' is not a name; use letters, digits, '-', '_' and '.'")
    elif len(name) > CLUSTER_NAME_MAX:
        col.error("slipway_cluster_name", f"is {len(name)} characters long; it names kubeadm's cluster, the kubeconfig "
                  f"contexts and the etcd snapshot files (etcd-NAME-TIME.db): use at most {CLUSTER_NAME_MAX}")


_CLUSTER_GROUPS = (GROUP_CONTROL_PLANE, GROUP_NODE, GROUP_ETCD, GROUP_LB)
_CONTROLLER_NAMES = ("localhost", "127.0.0.1", "::1")
_WHERE_TO_PUT = (f"put it in {GROUP_CONTROL_PLANE} (a control plane), {GROUP_NODE} (a worker), {GROUP_ETCD} (an "
                 f"external etcd member) or {GROUP_LB} (a vip load balancer)")


def _check_unused_hosts(col: Collector, groups: Mapping[str, Any], used: list[str]) -> None:
    """A host of the inventory in no group the cluster uses is not silently dropped: one in no group, in kubespray's
    older groups or in a misspelt one is an error; one the user put in a group of their own only (a spare machine,
    a bastion) is a warning."""
    used_set = set(used) | set(_group(groups, GROUP_CONTROL_PLANE)) | set(_group(groups, GROUP_NODE))
    for host in _group(groups, "all"):
        # The controller's own entry (localhost with its interpreter, for the tasks delegated to it) is no machine.
        if host in used_set or host in _CONTROLLER_NAMES:
            continue
        if not host.isprintable() or any(ch.isspace() for ch in host):
            # No inventory names a host so: Ansible made it of a file in the inventory's directory that is no
            # inventory (it warned it could not parse it), such as a snapshot etcd_backup.yml wrote to backups/.
            col.warn(f"host {host[:24]!r}", "is not a host name but bytes of a file in the inventory's directory that "
                     "is no inventory; it is ignored. Give -i the inventory file, or keep such files out of the directory "
                     "(ansible.cfg [inventory] ignore_patterns = ^artifacts$, ^backups$)")
            continue
        member_of = sorted(name for name, members in groups.items()
                           if name not in ("all", "ungrouped") and host in (members or []))
        hints, own = [], []
        for name in member_of:
            close = difflib.get_close_matches(name, _CLUSTER_GROUPS + (GROUP_K8S_CLUSTER,), n=1, cutoff=0.75)
            if name in OLD_GROUPS:
                hints.append(f"{name} is kubespray's older name of {OLD_GROUPS[name]}")
            elif name == GROUP_K8S_CLUSTER:
                hints.append(f"{GROUP_K8S_CLUSTER} is made of {GROUP_CONTROL_PLANE} and {GROUP_NODE}, it is in neither")
            elif close:
                hints.append(f"{name} is not {close[0]}")
            else:
                own.append(name)
        where = f" (in {', '.join(member_of)}: {'; '.join(hints)})" if hints else ""
        if hints or not own:
            col.error(f"host {host}", f"is in no group the cluster uses{where}, so it would be left out; {_WHERE_TO_PUT}, "
                      "or remove it from the inventory")
        else:
            col.warn(f"host {host}", f"is in no group the cluster uses (only in {', '.join(own)}) and gets nothing; "
                     f"{_WHERE_TO_PUT} for it to be part of the cluster")


def check_settings(settings: Mapping[str, Any], bundle: BundleReader | None = None) -> list[str]:
    """The settings and role variables alone, for a playbook that runs without an inventory (operator.yml and
    kubesphere.yml with a kubeconfig of the controller): raise ModelError with every problem, or return the warnings."""
    col = Collector()
    _check_setting_names(col, settings)
    given = {k: v for k, v in settings.items() if v is not None}
    role = {**role_defaults(), **{k: v for k, v in given.items() if k in ROLE_VARIABLE_NAMES}}
    merged = {**DEFAULT_SETTINGS, **{k: v for k, v in given.items() if k in DEFAULT_SETTINGS}}
    lb_mode = _choice(col, "slipway_lb_mode", merged["slipway_lb_mode"], LB_MODES)
    cni = _choice(col, "slipway_cni", merged["slipway_cni"], CNIS)
    kubesphere = _bool(col, "slipway_kubesphere_enabled", merged["slipway_kubesphere_enabled"])
    _check_roles(col, role, lb_mode, cni, kubesphere, {}, [], bundle)
    _check_kubespray(col, {k: v for k, v in given.items() if k in KUBESPRAY}, {**merged, **role})
    if col.problems:
        raise ModelError(col.problems, col.warnings)
    return [str(w) for w in col.warnings]


def build_model(
    groups: Mapping[str, Any], hostvars: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any],
    bundle: BundleReader | None = None, exclude: tuple[str, ...] | list[str] = (), check_k8s_cluster: bool = False,
) -> dict[str, Any]:
    """Validate the inventory and settings; return the model or raise ModelError with every problem.

    ``exclude``: hosts to leave out as if the inventory did not list them (the cluster as it is
    after removing them: remove_node.yml points the remaining load balancers at what is left).
    ``check_k8s_cluster``: the group k8s_cluster must hold every control plane and node, as the
    plays on it would otherwise run on a subset (site.yml completes it before; other playbooks do not).
    """
    col = Collector()
    if exclude:
        groups = {name: [host for host in (members or []) if host not in exclude] for name, members in groups.items()}
    _check_setting_names(col, settings)
    given = {k: v for k, v in settings.items() if v is not None}
    role = {**role_defaults(), **{k: v for k, v in given.items() if k in ROLE_VARIABLE_NAMES}}
    kubespray_given = {k: v for k, v in given.items() if k in KUBESPRAY}
    settings = {**DEFAULT_SETTINGS, **{k: v for k, v in given.items() if k in DEFAULT_SETTINGS}}

    control_planes = _group(groups, GROUP_CONTROL_PLANE)
    workers = _group(groups, GROUP_NODE)
    etcd_group = _group(groups, GROUP_ETCD)
    lb_group = _group(groups, GROUP_LB)
    if not control_planes:
        col.error("group kube_control_plane", "has no host; add at least one control plane host")

    cluster_hosts = list(dict.fromkeys(control_planes + workers))
    if check_k8s_cluster:
        k8s_cluster = set(_group(groups, "k8s_cluster"))
        outside = [host for host in cluster_hosts if host not in k8s_cluster]
        if outside:
            col.error("group k8s_cluster", ("does not exist" if GROUP_K8S_CLUSTER not in groups else
                                            f"lacks {', '.join(outside)}")
                      + "; the plays on it would miss hosts: add k8s_cluster with the children kube_control_plane "
                      "and kube_node to the inventory (site.yml adds them by itself)")
    all_hosts = list(dict.fromkeys(cluster_hosts + etcd_group + lb_group))
    _check_unused_hosts(col, groups, all_hosts)
    _check_names(col, all_hosts)
    addresses = {h: _node_address(col, h, hostvars.get(h, {})) for h in all_hosts}
    _check_addresses(col, addresses)

    parsed = parse_version(settings["slipway_kubernetes_version"])
    version = ""
    prerelease = _PRERELEASE.match(str(settings["slipway_kubernetes_version"]).strip())
    if prerelease:
        col.error("slipway_kubernetes_version", _prerelease_message(str(settings["slipway_kubernetes_version"]).strip(),
                                                                    prerelease))
    elif parsed is None:
        col.error(
            "slipway_kubernetes_version",
            f"'{settings['slipway_kubernetes_version']}' is not a Kubernetes version; set it like 1.37.1",
        )
    elif f"{parsed[0]}.{parsed[1]}" not in SUPPORTED_KUBERNETES_MINORS:
        col.error(
            "slipway_kubernetes_version",
            f"{parsed[0]}.{parsed[1]} is not supported; use a release of {', '.join(SUPPORTED_KUBERNETES_MINORS)}",
        )
    else:
        version = "%d.%d.%d" % parsed

    lb_mode = _choice(col, "slipway_lb_mode", settings["slipway_lb_mode"], LB_MODES)
    cni = _choice(col, "slipway_cni", settings["slipway_cni"], CNIS)
    etcd_mode = _choice(col, "slipway_etcd_mode", settings["slipway_etcd_mode"], ETCD_MODES)
    source = _choice(col, "slipway_artifacts_source", settings["slipway_artifacts_source"], ARTIFACT_SOURCES)
    kubesphere = _bool(col, "slipway_kubesphere_enabled", settings["slipway_kubesphere_enabled"])
    operator = _bool(col, "slipway_operator_enabled", settings["slipway_operator_enabled"])
    if operator and kubesphere is False:
        col.error("slipway_operator_enabled", "is true but slipway_kubesphere_enabled is false; the operator reconciles "
                  "the KubeSphere components, so set slipway_kubesphere_enabled: true too (or the operator off)")
    hardening = _choice(col, "slipway_hardening", settings["slipway_hardening"], HARDENING)
    encryption = _bool(col, "slipway_secrets_encryption", settings["slipway_secrets_encryption"])
    if lb_group and lb_mode in ("local_haproxy", "external"):
        col.warn("group loadbalancer", f"its hosts are only used with slipway_lb_mode vip; with {lb_mode} they get nothing")

    even_ok = _bool(col, "slipway_etcd_even_members_ok", settings["slipway_etcd_even_members_ok"])
    etcd_members = _check_etcd(col, etcd_mode or "stacked", control_planes, etcd_group,
                               even_ok=even_ok or bool(exclude)) if etcd_mode else []

    artifacts = _artifacts(col, settings, source, version, bundle)
    _check_optional_images(col, artifacts, source, kubesphere, operator)

    pod = _parse_cidr(col, "slipway_pod_cidr", settings["slipway_pod_cidr"])
    service = _parse_cidr(col, "slipway_service_cidr", settings["slipway_service_cidr"])
    node_mask = _int(col, "slipway_node_cidr_mask_size", settings["slipway_node_cidr_mask_size"], 1, 128,
                     "a prefix length; set a number such as 24")
    endpoint = _endpoint(col, lb_mode, settings, control_planes, addresses, lb_group)
    _check_networks(col, pod, service, node_mask, addresses, len(cluster_hosts), _ip(endpoint.get("vip") or ""))
    _check_names_of_the_cluster(col, settings)
    if source == "mirror" and settings.get("slipway_artifacts_mirror_url"):
        _check_url(col, "slipway_artifacts_mirror_url", settings["slipway_artifacts_mirror_url"], "https://files.example")
    registry = str(settings.get("slipway_artifacts_registry_mirror") or "")
    if registry and (not re.match(r"^[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._/-]*)?$", registry)):
        col.error("slipway_artifacts_registry_mirror", f"'{registry}' is not a registry; set host[:port] without "
                  "http://, like registry.example:5000")
    _check_roles(col, role, lb_mode, cni, kubesphere, endpoint, control_planes, bundle)
    accepted = _check_kubespray(col, kubespray_given, {**settings, **role})

    if col.problems or pod is None or service is None:
        raise ModelError(col.problems, col.warnings)

    etcd_pki_dir = "/etc/kubernetes/pki" if etcd_mode == "stacked" else str(role["etcd_pki_dir"]).rstrip("/")
    nodes = {}
    for host in all_hosts:
        roles = [role for role, members in (
            ("control_plane", control_planes), ("worker", workers), ("etcd", etcd_members),
            ("loadbalancer", endpoint["lb_hosts"]),
        ) if host in members]
        address = addresses[host] or ""
        # url_host: the address as it goes into a URL or host:port (IPv6 in brackets).
        nodes[host] = {"name": host, "address": addresses[host], "url_host": f"[{address}]" if ":" in address else address,
                       "roles": roles, "kubernetes": host in cluster_hosts}
        if host in control_planes:
            # This control plane's own API server, straight (not through the endpoint's load balancer).
            nodes[host]["api_url"] = f"https://{nodes[host]['url_host']}:{endpoint['apiserver_port']}"
    return {
        "name": settings["slipway_cluster_name"],
        "kubernetes_version": version,
        "kubernetes_minor": version.rsplit(".", 1)[0],
        "dns_domain": settings["slipway_dns_domain"],
        "pod_cidr": str(pod),
        "service_cidr": str(service),
        "node_cidr_mask_size": node_mask,
        "kubernetes_service_ip": str(service.network_address + 1),
        "cluster_dns_ip": str(service.network_address + 10),
        "cni": cni,
        "etcd_mode": etcd_mode,
        # Where each etcd member keeps its certificates: etcd_pki_dir holds the API server's client certificate
        # (apiserver-etcd-client.*), etcd_certs_dir etcd's CA, server, peer and health-check client certificates.
        "etcd_pki_dir": etcd_pki_dir,
        "etcd_certs_dir": f"{etcd_pki_dir}/etcd",
        "artifacts_source": source,
        "artifacts": artifacts,
        "kubesphere_enabled": kubesphere,
        "operator_enabled": operator,
        "hardening": hardening,
        "secrets_encryption": encryption,
        "endpoint": endpoint,
        "control_planes": control_planes,
        "first_control_plane": control_planes[0],
        "workers": workers,
        "etcd_members": etcd_members,
        # etcd's client URLs, one per member, as the API servers and kubeadm are given them.
        "etcd_client_urls": [f"https://{nodes[member]['url_host']}:2379" for member in etcd_members],
        "loadbalancers": endpoint["lb_hosts"],
        "nodes": nodes,
        "warnings": [str(w) for w in col.warnings],
        # kubespray variables of the inventory that do what slipway.cluster does: not read, no harm.
        "kubespray_ignored": accepted,
    }
