# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Read-only host checks: judge the facts read from every node against the cluster model.

Pure Python, so every check is a unit test. Returns problems (the run stops) and
warnings (the run goes on, the summary shows them), each naming the host and what to change.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Mapping

from ansible_collections.slipway.cluster.plugins.module_utils._problems import Problem

SUPPORTED_OS = {"debian": ("12", "13"), "ubuntu": ("22.04", "24.04")}
SUPPORTED_ARCH = ("x86_64", "amd64", "aarch64", "arm64")

# Processes that may hold our ports: a rerun finds the cluster's own components there.
OWN_PROCESSES = (
    "kube-apiserver", "etcd", "kubelet", "kube-controller", "kube-controller-manager",
    "kube-scheduler", "kube-proxy", "haproxy", "keepalived", "containerd",
)
# Interfaces the cluster creates itself; their addresses sit inside the pod network by design.
CLUSTER_INTERFACES = ("cni0", "flannel.", "cali", "vxlan.calico", "tunl0", "cilium_", "lxc", "kube-ipvs0", "veth")

DEFAULT_OPTIONS: dict[str, Any] = {
    "min_cpus_control_plane": 2,
    "min_cpus_worker": 1,
    "min_memory_mb_control_plane": 1700,
    "min_memory_mb_worker": 1024,
    "check_time_sync": True,
    "check_ports": True,
    "allow_unsupported_os": False,
}


def options_from(given: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """The options with their types (numbers and booleans written as strings count), and one problem per wrong one."""
    options = dict(DEFAULT_OPTIONS)
    problems = []
    for key, value in given.items():
        default = DEFAULT_OPTIONS[key]
        text = str(value).strip().lower()
        if isinstance(default, bool):
            if isinstance(value, bool) or text in ("true", "false", "yes", "no", "on", "off", "1", "0"):
                options[key] = value if isinstance(value, bool) else text in ("true", "yes", "on", "1")
                continue
            problems.append(Problem(f"preflight_{key}", f"'{value}' is not a boolean; set true or false"))
        else:
            if not isinstance(value, bool) and text.isdigit():
                options[key] = int(text)
                continue
            problems.append(Problem(f"preflight_{key}", f"'{value}' is not a number; set a whole number such as {default}"))
    return options, problems


def ports_for(model: Mapping[str, Any], node: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The (bind address, TCP port) pairs this node's cluster roles will listen on."""
    roles = node["roles"]
    endpoint = model["endpoint"]
    ports: list[tuple[str, int]] = []
    if "control_plane" in roles:
        ports += [("*", endpoint["apiserver_port"]), ("*", 10257), ("*", 10259)]
    if "etcd" in roles:
        # Clients, peers, and the metrics etcd serves on loopback (kubeadm's and the etcd role's).
        ports += [("*", 2379), ("*", 2380), ("127.0.0.1", 2381)]
    if node.get("kubernetes"):
        ports += [("*", 10250), ("*", 10256)]
        if endpoint["mode"] == "local_haproxy":
            ports.append(("127.0.0.1", endpoint["lb_port"]))
    if "loadbalancer" in roles:
        ports.append(("*", endpoint["lb_port"]))
    return list(dict.fromkeys(ports))


def _networks(facts: Mapping[str, Any]) -> list[tuple[str, ipaddress.IPv4Interface | ipaddress.IPv6Interface]]:
    result = []
    for entry in facts.get("addresses") or []:
        name = str(entry.get("interface", ""))
        if name == "lo" or name.startswith(CLUSTER_INTERFACES):
            continue
        try:
            result.append((name, ipaddress.ip_interface(f"{entry['address']}/{entry['prefix']}")))
        except (KeyError, ValueError):
            continue
    return result


def _check_os(host: str, facts: Mapping[str, Any], options: Mapping[str, Any], out: list[Problem]) -> None:
    os_info = facts.get("os") or {}
    os_id, version = str(os_info.get("id", "")), str(os_info.get("version_id", ""))
    if version not in SUPPORTED_OS.get(os_id, ()) and not options["allow_unsupported_os"]:
        supported = "; ".join(f"{k} {', '.join(v)}" for k, v in SUPPORTED_OS.items())
        out.append(Problem(
            f"host {host}",
            f"runs {os_info.get('pretty_name') or os_id + ' ' + version}, which is not supported ({supported}); "
            "use a supported OS or set preflight_allow_unsupported_os: true",
        ))
    if facts.get("arch") not in SUPPORTED_ARCH:
        out.append(Problem(f"host {host}", f"has architecture {facts.get('arch')}; use an x86_64 or aarch64 machine"))


def _check_size(host: str, node: Mapping[str, Any], facts: Mapping[str, Any], options: Mapping[str, Any], out: list[Problem]) -> None:
    kind = "control_plane" if "control_plane" in node["roles"] else "worker"
    if not node.get("kubernetes"):
        return
    cpus, memory = int(facts.get("cpus") or 0), int(facts.get("memory_mb") or 0)
    min_cpus, min_mem = options[f"min_cpus_{kind}"], options[f"min_memory_mb_{kind}"]
    label = kind.replace("_", " ")
    if cpus < min_cpus:
        out.append(Problem(
            f"host {host}",
            f"has {cpus} CPU(s); a {label} needs at least {min_cpus} (preflight_min_cpus_{kind})",
        ))
    if memory < min_mem:
        out.append(Problem(
            f"host {host}",
            f"has {memory} MB of memory; a {label} needs at least {min_mem} MB (preflight_min_memory_mb_{kind})",
        ))


def _check_ports(host: str, model: Mapping[str, Any], node: Mapping[str, Any], facts: Mapping[str, Any], out: list[Problem]) -> None:
    listening = facts.get("listening") or []
    for bind, port in ports_for(model, node):
        for sock in listening:
            if int(sock.get("port", 0)) != port:
                continue
            address = str(sock.get("address", ""))
            if bind != "*" and address not in (bind, "0.0.0.0", "::"):
                continue
            process = str(sock.get("process") or "unknown process")
            if process.startswith(OWN_PROCESSES):
                continue
            out.append(Problem(
                f"host {host}",
                f"TCP port {port} is in use by {process} on {address or '*'}; the cluster needs it: "
                "stop that service or move it to another port",
            ))
            break


def _check_networks(host: str, model: Mapping[str, Any], node: Mapping[str, Any], facts: Mapping[str, Any], out: list[Problem]) -> None:
    networks = _networks(facts)
    own = {str(iface.ip) for dummy, iface in networks}
    if node["address"] and node["address"] not in own:
        out.append(Problem(
            f"host {host}",
            f"ip {node['address']} is not an address of this host (it has {', '.join(sorted(own)) or 'none'}); "
            "set ip: to one of them",
        ))
    for var in ("pod_cidr", "service_cidr"):
        cluster_net = ipaddress.ip_network(model[var])
        for name, iface in networks:
            if iface.version == cluster_net.version and iface.network.overlaps(cluster_net):
                out.append(Problem(
                    f"host {host}",
                    f"slipway_{var} {cluster_net} overlaps the network {iface.network} of interface {name}; "
                    f"choose a slipway_{var} outside the hosts' networks",
                ))
    vip = model["endpoint"].get("vip")
    if vip and "loadbalancer" in node["roles"]:
        vip_ip = ipaddress.ip_address(vip)
        if not any(vip_ip in iface.network for dummy, iface in networks):
            out.append(Problem(
                f"host {host}",
                f"the virtual IP {vip} is in none of this load balancer's networks; "
                "choose slipway_control_plane_endpoint inside the network of its ip",
            ))


def _check_time(host: str, facts: Mapping[str, Any], out: list[Problem]) -> None:
    sync = facts.get("time_sync") or {}
    if sync.get("synchronized") or sync.get("services") or facts.get("container"):
        return
    out.append(Problem(
        f"host {host}",
        "its clock is not synchronized and no time service runs; certificates and etcd need agreeing clocks: "
        "install chrony or enable systemd-timesyncd (or set preflight_check_time_sync: false)",
    ))


def unanswered(host: str, reason: str | None, unreachable: bool) -> Problem:
    """The problem of a host whose facts could not be read, with Ansible's reason."""
    reason = " ".join(str(reason or "").split()) or "no reason given"
    # ansible-core 2.19 prefixes the connection's message with this.
    reason = reason[len("Task failed: "):] if reason.startswith("Task failed: ") else reason
    if unreachable:
        return Problem(f"host {host}", f"is unreachable: {reason}; check its address, port, user and key, then rerun")
    return Problem(f"host {host}", f"could not be read: {reason}; fix it and rerun")


def check_hosts(
    model: Mapping[str, Any], facts_by_host: Mapping[str, Mapping[str, Any] | None], options: Mapping[str, Any] | None = None,
    unanswered_hosts: Mapping[str, Problem] | None = None,
) -> tuple[list[Problem], list[Problem]]:
    """Check every node of the model against the facts read from it; return (problems, warnings).

    ``unanswered_hosts``: the problem to report for a host without facts (see ``unanswered``), by host.
    """
    opts, problems = options_from(options or {})
    warnings: list[Problem] = []
    if problems:
        return problems, warnings
    for host, node in model["nodes"].items():
        facts = facts_by_host.get(host)
        if not facts:
            problems.append((unanswered_hosts or {}).get(host) or Problem(
                f"host {host}", "could not be checked (unreachable or failed); fix the connection and rerun"))
            continue
        _check_os(host, facts, opts, problems)
        _check_size(host, node, facts, opts, problems)
        if opts["check_ports"]:
            _check_ports(host, model, node, facts, problems)
        _check_networks(host, model, node, facts, problems)
        if opts["check_time_sync"]:
            _check_time(host, facts, problems)
        for name, state in sorted((facts.get("kernel_modules") or {}).items()):
            if state == "missing" and node.get("kubernetes"):
                problems.append(Problem(
                    f"host {host}",
                    f"kernel module {name} is neither built in nor installed; install the kernel's extra modules "
                    "package (e.g. linux-modules-extra-$(uname -r)) or boot a kernel that has it",
                ))
        swap = int((facts.get("swap") or {}).get("total_mb") or 0)
        if swap and node.get("kubernetes"):
            warnings.append(Problem(f"host {host}", f"swap is on ({swap} MB); the preinstall role turns it off for the kubelet"))
        untested = _untested_platform(facts)
        if untested:
            warnings.append(Problem(f"host {host}", untested))
        if node.get("kubernetes") and facts.get("cgroup_version") == 1:
            warnings.append(Problem(
                f"host {host}",
                "uses cgroup v1; the kubelet runs with failCgroupV1: false, but cgroup v1 is deprecated "
                "upstream: boot with systemd.unified_cgroup_hierarchy=1 to move to cgroup v2",
            ))
    return problems, warnings


def _untested_platform(facts: Mapping[str, Any]) -> str:
    """What of a supported host no test of the collection runs (docs/preflight.md, the platforms): said, not refused."""
    os_info = facts.get("os") or {}
    untested = []
    if os_info.get("id") == "ubuntu" and str(os_info.get("version_id", "")) in SUPPORTED_OS["ubuntu"]:
        untested.append(f"Ubuntu {os_info.get('version_id')}")
    if facts.get("arch") in ("aarch64", "arm64"):
        untested.append("aarch64")
    if not untested:
        return ""
    return (f"runs {' on '.join(untested)}, which is supported but run by none of the collection's tests (they run "
            "Debian 12 and 13 on x86_64; docs/preflight.md, the platforms): report what differs")


def node_summary(facts: Mapping[str, Any]) -> dict[str, Any]:
    """The facts the roles use, kept in the model so no role reads them again."""
    caps = facts.get("capabilities") or {}
    return {
        "os": (facts.get("os") or {}).get("id", ""),
        "os_version": (facts.get("os") or {}).get("version_id", ""),
        "arch": facts.get("arch", ""),
        "cgroup_version": facts.get("cgroup_version", 2),
        "container": bool(facts.get("container")),
        "cap_sys_resource": bool(caps.get("sys_resource", True)),
        "swap_mb": int((facts.get("swap") or {}).get("total_mb") or 0),
        "kernel_modules": dict(facts.get("kernel_modules") or {}),
        # A role skips a task whose work these show done: the hostname, swap in /etc/fstab, apt for
        # installed packages, starting a service that runs and starts at boot.
        "hostname": facts.get("hostname", ""),
        "static_hostname": facts.get("static_hostname", ""),
        "swap_fstab": list((facts.get("swap") or {}).get("fstab") or []),
        "packages": list(facts.get("packages") or []),
        "services": {
            "active": list((facts.get("services") or {}).get("active") or []),
            "enabled": list((facts.get("services") or {}).get("enabled") or []),
        },
    }
