# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The validated cluster model.

Turns the inventory (groups and host variables) and the cluster-wide ``slipway_*``
settings into one normalized model of the cluster, or into the complete list of
problems that stop the run. Pure Python: no Ansible, no network, so every bad
input is a unit test.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from typing import Any, Mapping

from ansible_collections.slipway.cluster.plugins.module_utils import _artifacts as artifacts
from ansible_collections.slipway.cluster.plugins.module_utils import _kubespray as kubespray
from ansible_collections.slipway.cluster.plugins.module_utils._artifacts import KUBERNETES_RELEASES
from ansible_collections.slipway.cluster.plugins.module_utils._kubespray import KUBESPRAY
from ansible_collections.slipway.cluster.plugins.module_utils._problems import Collector, ModelError
from ansible_collections.slipway.cluster.plugins.module_utils._role_settings import check_roles
from ansible_collections.slipway.cluster.plugins.module_utils._settings import (
    ARTIFACT_SOURCES,
    CNIS,
    DEFAULT_SETTINGS,
    ETCD_MODES,
    GROUP_CONTROL_PLANE,
    GROUP_ETCD,
    GROUP_K8S_CLUSTER,
    GROUP_LB,
    GROUP_NODE,
    HARDENING,
    LB_MODES,
    OWN_PREFIXES,
    OWN_VARIABLES,
    ROLE_VARIABLE_NAMES,
    SUPPORTED_KUBERNETES_MINORS,
    role_defaults,
)
from ansible_collections.slipway.cluster.plugins.module_utils._values import (
    DNS_NAME_MAX,
    SCHEME,
    URL,
    BundleReader,
    address_problem,
    as_address,
    as_ip,
    boolean,
    check_url,
    dns_name_problem,
    integer,
    parse_endpoint,
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


def _bool(col: Collector, var: str, value: Any) -> bool:
    """Booleans as Ansible reads them: true/false, yes/no, on/off, 1/0 (false, with the problem said, otherwise)."""
    return bool(boolean(col, var, value))


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
        address = as_ip(hostvars["ip"])
        if address is None:
            col.error(f"host {host}", f"ip '{hostvars['ip']}' is not an IP address; set ip: to the node's IPv4 address")
            return ""
        return _usable_address(col, host, "ip", address)
    ansible_host = hostvars.get("ansible_host")
    address = as_ip(ansible_host) if ansible_host else None
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
                even_ok: bool = False, workers: list[str] | None = None) -> list[str]:
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
        # A worker runs the cluster's pods: beside them etcd competes for disk and CPU (slow writes, lost leaders,
        # an API that stalls), and a drain or a node's trouble takes a member with it.
        busy = [host for host in members if host in (workers or []) and host not in control_planes]
        if busy:
            col.warn("group etcd", f"{', '.join(busy)} {'is' if len(busy) == 1 else 'are'} also in kube_node: "
                     f"{'its' if len(busy) == 1 else 'their'} etcd member runs beside the cluster's workloads, which "
                     "compete with it for disk and CPU (slow writes, leader elections, a stalling API) and whose "
                     "drains and failures take the member with them; give etcd hosts of its own (or the control "
                     "planes), or take them out of kube_node")
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
    node_families = {as_address(address).version for address in addresses.values() if address}
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
    other = sorted(host for host, address in addresses.items() if address and family and as_address(address).version != family)
    if other:
        col.error("slipway_service_cidr" if service is not None else "slipway_pod_cidr",
                  f"is IPv{family} but the address of host {', '.join(other)} is not; a single-stack cluster uses one "
                  "address family: give the nodes addresses of the networks' family (ip:) or change the networks")
    return _check_network_sizes(col, pod, service, node_mask, addresses, node_count, vip)


def _check_network_sizes(col, pod, service, node_mask, addresses, node_count, vip):
    for var, net in (("slipway_pod_cidr", pod), ("slipway_service_cidr", service)):
        if net is None:
            continue
        inside = [f"{host} ({address})" for host, address in sorted(addresses.items()) if address and as_ip(address) in net]
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
    scheme = SCHEME.match(raw)
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
        host, port = parse_endpoint(raw, lb_port)
        vip = as_ip(host)
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
        host, port = parse_endpoint(raw, api_port)
        if not raw:
            col.error("slipway_control_plane_endpoint", "slipway_lb_mode is external: set it to your load balancer's address[:port]")
        elif as_ip(host) is None and dns_name_problem(host):
            col.error("slipway_control_plane_endpoint", f"'{host[:80]}' is neither an IP address nor a DNS name: it "
                      f"{dns_name_problem(host)}; set your load balancer's address[:port], e.g. lb.example.com:6443")
        elif (endpoint_ip := as_ip(host)) is not None and address_problem(endpoint_ip):
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
        url_exists = getattr(bundle, "url_exists", None) if URL.match(mirror_url.strip()) else None
        # Sums the inventory copied from upstream's published checksums, for files the collection pins none for.
        pinned, problems = artifacts.inventory_checksums(settings.get(artifacts.INVENTORY_CHECKSUMS))
        col.problems.extend(problems)
        result, problems = artifacts.from_release(
            version, source, mirror_url=mirror_url, registry=str(settings.get("slipway_artifacts_registry_mirror") or ""),
            url_exists=url_exists, warnings=col.warnings, inventory=pinned,
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


def _check_mirror_scheme(col: Collector, url: str, insecure_http: Any) -> None:
    """A file mirror over plain HTTP only when the inventory accepts the risk by name."""
    if url.strip().lower().startswith("http://") and insecure_http is False:
        col.error("slipway_artifacts_mirror_url", (
            f"'{url}' is plain http://: anyone on the network between the mirror and the controller or the nodes can "
            "read what they download and send other files in its place (each is checked against the sha256 the "
            "collection pins and the run stops, but no cluster is made); serve the mirror over https://, or set "
            "slipway_artifacts_mirror_insecure_http: true to accept that risk"))


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
    check_roles(col, role, lb_mode, cni, kubesphere, {}, [], bundle)
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
    # The hosts left out that the inventory lists: a removal's rerun asks of them still (remove_node.yml).
    excluded = [host for host in dict.fromkeys(exclude)
                if any(host in (members or []) for name, members in groups.items() if name in _CLUSTER_GROUPS)]
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
                               even_ok=even_ok or bool(exclude), workers=workers) if etcd_mode else []

    artifacts = _artifacts(col, settings, source, version, bundle)
    _check_optional_images(col, artifacts, source, kubesphere, operator)

    pod = _parse_cidr(col, "slipway_pod_cidr", settings["slipway_pod_cidr"])
    service = _parse_cidr(col, "slipway_service_cidr", settings["slipway_service_cidr"])
    node_mask = integer(col, "slipway_node_cidr_mask_size", settings["slipway_node_cidr_mask_size"], 1, 128,
                        "a prefix length; set a number such as 24")
    endpoint = _endpoint(col, lb_mode, settings, control_planes, addresses, lb_group)
    _check_networks(col, pod, service, node_mask, addresses, len(cluster_hosts), as_ip(endpoint.get("vip") or ""))
    _check_names_of_the_cluster(col, settings)
    insecure_http = _bool(col, "slipway_artifacts_mirror_insecure_http", settings["slipway_artifacts_mirror_insecure_http"])
    if source == "mirror" and settings.get("slipway_artifacts_mirror_url"):
        check_url(col, "slipway_artifacts_mirror_url", settings["slipway_artifacts_mirror_url"], "https://files.example")
        _check_mirror_scheme(col, str(settings["slipway_artifacts_mirror_url"]), insecure_http)
    registry = str(settings.get("slipway_artifacts_registry_mirror") or "")
    if registry and (not re.match(r"^[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._/-]*)?$", registry)):
        col.error("slipway_artifacts_registry_mirror", f"'{registry}' is not a registry; set host[:port] without "
                  "http://, like registry.example:5000")
    check_roles(col, role, lb_mode, cni, kubesphere, endpoint, control_planes, bundle)
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
        "excluded": excluded,
        # Their addresses as the inventory gives them: remove_node.yml compares them with the Nodes' before any contact.
        "excluded_addresses": {host: _node_address(Collector(), host, hostvars.get(host, {})) for host in excluded},
        "warnings": [str(w) for w in col.warnings],
        # kubespray variables of the inventory that do what slipway.cluster does: not read, no harm.
        "kubespray_ignored": accepted,
    }
