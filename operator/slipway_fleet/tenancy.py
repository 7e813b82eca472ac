"""What a tenant may ask of the fleet, checked before any Job: pure Python (docs/security.md, "The fleet's tenants").

A tenant writes SlipwayClusters, SlipwayOperations and Secrets in its own namespace, nothing else. Before the
controller starts an operation for a spec, it holds the spec to these rules, each refusal naming the field:

- ``templates``: no string of the spec holds a Jinja delimiter. Every value reaches Ansible marked unsafe anyway
  (runner.py); a delimiter is refused so that a tenant learns it is not evaluated, rather than seeing it taken
  literally.
- ``configuration_secrets``: KubeSphere's ClusterConfiguration holds no secret (its JWT key, a log store's password).
- ``bundle_dir``: the bundle the Jobs see is the fleet's (mounted at the fleet's bundle mount); a tenant names no
  other directory, and the controller reads no file a tenant names (``FleetBundle``).
- ``conflicts``: a host (its address or ip) belongs to one SlipwayCluster, in any namespace. Clusters are ranked
  (created first, then the oldest, then by namespace and name) and a cluster that names a host a cluster ranked
  before it holds is refused, naming the holder; what a cluster holds is its spec's hosts and those of the spec
  its hosts last applied.
- ``range_problems``: an administrator may limit the addresses a namespace names with the namespace's annotation
  ``fleet.slipway.io/address-ranges`` (CIDRs, comma separated); hosts are then given by IP, in those ranges.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Any

from . import spec as fleet

RANGES_ANNOTATION = f"{fleet.GROUP}/address-ranges"
JINJA = re.compile(r"\{\{|\{%|\{#")


def strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(field path, string) for every string in ``value``, keys included; hosts named by their name."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{path}.{key} (its name)", str(key)
            yield from strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            name = item.get("name") if isinstance(item, dict) and isinstance(item.get("name"), str) else None
            yield from strings(item, f"{path}[{name if name and not JINJA.search(name) else index}]")


def templates(spec: dict) -> list[str]:
    """Every string of the spec that holds a Jinja delimiter."""
    return [f"{where}: holds '{JINJA.search(text).group(0)}'; the fleet passes every value as written and never "  # type: ignore[union-attr]
            "evaluates it as a template: write the value itself"
            for where, text in strings(spec, "spec") if JINJA.search(text)]


# The secrets of KubeSphere's ClusterConfiguration (ks-installer's format): kept out of the spec, whose every reader
# (and its status, Events and the Job's ConfigMap) would see them; the kubesphere role makes each one and keeps it.
CONFIGURATION_SECRETS = (("authentication", "jwtSecret"), ("common", "es", "basicAuth", "password"),
                         ("common", "opensearch", "basicAuth", "password"))


def configuration_secrets(spec: dict) -> list[str]:
    """Secrets written into spec.kubesphere.clusterConfiguration."""
    problems = []
    for path in CONFIGURATION_SECRETS:
        value: Any = (spec.get("kubesphere") or {}).get("clusterConfiguration") or {}
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value not in (None, ""):
            problems.append(f"spec.kubesphere.clusterConfiguration.{'.'.join(path)}: is a secret, which a SlipwayCluster "
                            "does not hold (its readers, status and the operation's inputs would show it): leave it empty, "
                            "and the kubesphere role makes one and keeps it in the cluster")
    return problems


def bundle_dir(spec: dict, mount: str) -> list[str]:
    """A bundle source must name the fleet's own bundle mount."""
    artifacts = spec.get("artifacts") or {}
    given = str(artifacts.get("bundleDir") or "").rstrip("/")
    if artifacts.get("source", "bundle") != "bundle" or not given or given == mount.rstrip("/"):
        return []
    return [f"spec.artifacts.bundleDir: {given[:200]} is not where the fleet's Jobs see the bundle; set {mount} "
            "(the fleet's bundle mount)"]


class FleetBundle:
    """The model's bundle reader in the controller: the fleet's own bundle only, no file a tenant names, no request
    to a server a tenant chose (the mirror's files are checked by the Job, from the hosts' side)."""

    def __init__(self, reader, mount: str):
        self._reader = reader
        self._mount = mount.rstrip("/")

    def manifest(self, directory):
        if reader_dir(directory) != self._mount:
            return None
        return self._reader.manifest(self._mount)

    def checksum(self, path):
        return self._reader.checksum(path)

    def save(self):
        if hasattr(self._reader, "save"):
            self._reader.save()

    @staticmethod
    def yaml_file(_path):
        return None, "is a file of the Job's, which the fleet does not read: give the value itself"


def reader_dir(directory) -> str:
    return str(directory or "").rstrip("/")


# --- hosts and their owners ------------------------------------------------------------------------------

def _address(text: Any) -> str:
    """An address as compared: an IP in its canonical form, a name in lowercase without a final dot."""
    value = str(text or "").strip()
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return value.lower().rstrip(".")


def held(obj: dict) -> dict[str, str]:
    """{address: host name} of every address the cluster holds: its spec's hosts and its applied spec's."""
    applied = fleet.applied_spec(obj)
    found: dict[str, str] = {}
    for host in list((obj.get("spec") or {}).get("hosts") or []) + list((applied or {}).get("hosts") or []):
        for key in ("address", "ip"):
            if host.get(key):
                found.setdefault(_address(host[key]), str(host.get("name") or ""))
    return found


def _rank(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return (0 if (obj.get("status") or {}).get("created") else 1, meta.get("creationTimestamp") or "~",
            meta.get("namespace") or "", meta.get("name") or "")


def conflicts(obj: dict, others: list[dict]) -> list[str]:
    """The hosts of ``obj`` that a cluster ranked before it holds, each naming the holder."""
    mine = held(obj)
    uid = (obj.get("metadata") or {}).get("uid")
    problems = []
    for other in sorted(others, key=_rank):
        meta = other.get("metadata") or {}
        if meta.get("uid") == uid or _rank(other) > _rank(obj):
            continue
        if meta.get("deletionTimestamp") and not (other.get("status") or {}).get("created"):
            continue  # deleted before it touched anything: it holds nothing
        theirs = held(other)
        for address, host in sorted(mine.items()):
            if address in theirs:
                problems.append(f"spec.hosts[{host}]: {address} is a host of the SlipwayCluster "
                                f"{meta.get('namespace')}/{meta.get('name')} (its {theirs[address]}); a host belongs to "
                                "one cluster: name another machine, or remove it from that cluster first")
    return problems


def ranges(namespace: dict | None) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None:
    """The address ranges the namespace's annotation allows; None: no limit. A range that does not parse allows
    nothing (the administrator's mistake must not open every address)."""
    text = ((namespace or {}).get("metadata", {}).get("annotations") or {}).get(RANGES_ANNOTATION)
    if text is None:
        return None
    found = []
    for part in str(text).replace(" ", ",").split(","):
        if part:
            try:
                found.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                return []
    return found


def range_problems(spec: dict, namespace_name: str, allowed: list | None) -> list[str]:
    """Hosts (and the endpoint's address) outside the namespace's address ranges."""
    if allowed is None:
        return []
    shown = ", ".join(str(net) for net in allowed) or "none (the annotation does not parse)"
    where = f"the namespace {namespace_name} allows only {shown} ({RANGES_ANNOTATION}, set by an administrator)"
    problems = []
    checked = [(f"spec.hosts[{host.get('name')}].{key}", host[key])
               for host in spec.get("hosts") or [] for key in ("address", "ip") if host.get(key)]
    endpoint = (spec.get("controlPlaneEndpoint") or {}).get("address")
    if endpoint:
        checked.append(("spec.controlPlaneEndpoint.address", endpoint_host(str(endpoint))))
    for field_path, value in checked:
        try:
            address = ipaddress.ip_address(str(value).strip("[]"))
        except ValueError:
            problems.append(f"{field_path}: {str(value)[:100]} is a name; {where}: give the host's IP")
            continue
        if not any(address in net for net in allowed):
            problems.append(f"{field_path}: {address} is outside the addresses {where}")
    return problems


def endpoint_host(text: str) -> str:
    """The host of an address[:port] (an IPv6 address in brackets when a port follows)."""
    if text.startswith("["):
        return text[1:].split("]", 1)[0]
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


def api_ports(spec: dict) -> list[int]:
    """The ports a cluster's Job reaches API servers on: the management cluster's (6443, 443 by its Service) and the
    cluster's own endpoint (the API servers, the load balancer's port, an external address's port)."""
    endpoint = spec.get("controlPlaneEndpoint") or {}
    ports = {443, 6443, int(endpoint.get("port") or 8443)}
    address = str(endpoint.get("address") or "")
    tail = address.rsplit("]:", 1)[1] if address.startswith("[") and "]:" in address else \
        address.rsplit(":", 1)[1] if address.count(":") == 1 else ""
    if tail.isdigit():
        ports.add(int(tail))
    return sorted(ports)


# --- host keys -------------------------------------------------------------------------------------------

def known_host_keys(spec: dict, status: dict) -> dict[str, list[str]]:
    """{host: public keys} a host must offer: pinned in the spec (hosts[].hostKeys), else recorded at its first
    contact (status.hostKeys)."""
    recorded = {entry["name"]: list(entry.get("keys") or []) for entry in status.get("hostKeys") or []
                if isinstance(entry, dict) and entry.get("name")}
    known = {}
    for host in spec.get("hosts") or []:
        keys = list(host.get("hostKeys") or []) or recorded.get(host["name"])
        if keys:
            known[host["name"]] = keys
    return known


def record_host_keys(obj: dict, status: dict, reported: list | None) -> list[dict]:
    """status.hostKeys after an operation: the keys recorded before, and those the Job reported for hosts it met
    first (never one that replaces a recorded key), kept for the hosts of the spec and the applied spec only."""
    spec_hosts = {host["name"]: host for host in (obj.get("spec") or {}).get("hosts") or []}
    applied = fleet.applied_spec({"status": status}) or {}
    names = set(spec_hosts) | {host["name"] for host in applied.get("hosts") or []}
    recorded = {entry["name"]: list(entry.get("keys") or []) for entry in status.get("hostKeys") or []
                if isinstance(entry, dict) and entry.get("name")}
    for entry in reported or []:
        if isinstance(entry, dict) and entry.get("name") in names and entry["name"] not in recorded \
                and not spec_hosts.get(entry["name"], {}).get("hostKeys"):
            recorded[entry["name"]] = [str(key) for key in entry.get("keys") or []][:4]
    return [{"name": name, "keys": keys} for name, keys in sorted(recorded.items()) if name in names and keys]
