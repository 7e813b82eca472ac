#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: node_facts
short_description: Read, in one round-trip, the facts a node must have before it joins a cluster
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Reads the operating system, CPU count, memory, swap, cgroup version, virtualization, clock
    synchronization, listening TCP sockets with their processes, effective capabilities, interface
    addresses, the state of the kernel modules Kubernetes needs, the hostname, the installed
    Debian packages and the systemd services that run or start at boot.
  - Changes nothing on the node. It replaces fact gathering for the preflight checks of
    M(slipway.cluster.host_checks) and is much cheaper than M(ansible.builtin.setup).
  - A kernel module counts as present when it is loaded, built into the kernel (listed in
    C(modules.builtin), present under C(/sys/module) or enabled as C(=y) in the kernel
    configuration), so kernels built without module support work.
options:
  kernel_modules:
    description:
      - Kernel modules whose state to report.
    type: list
    elements: str
    default: [overlay, br_netfilter]
  services:
    description:
      - systemd service units whose state to report in RV(node_facts.services).
      - Read with one C(systemctl show) call together with the time services, which is much quicker than
        listing every unit file.
    type: list
    elements: str
    default: [containerd.service, kubelet.service, haproxy.service, keepalived.service, etcd.service]
  paths:
    description:
      - Paths whose state to report in RV(node_facts.files) - type, mode, owner, group and, for a regular file, its
        sha256 - so that a role can skip writing a file that already holds what it would write.
      - A symbolic link is followed, as M(slipway.cluster.files) follows it.
    type: list
    elements: path
    default: []
  secret_paths:
    description:
      - Paths reported in RV(node_facts.files) as those of O(paths) are, but never with a sha256, for files that
        hold a secret, whose digest is kept out of the results.
    type: list
    elements: path
    default: []
  contents:
    description:
      - Small text files (up to 256 KiB) whose content to report in RV(node_facts.contents), so that a role can skip
        reading them again. Never name a file that holds a secret.
    type: list
    elements: path
    default: []
  blocks:
    description:
      - Blocks of lines between the markers M(ansible.builtin.blockinfile) writes, whose sha256 to report in
        RV(node_facts.blocks), so that a role can skip a C(blockinfile) task whose block is already there.
      - Each is a dictionary with C(path) and C(marker), the marker as given to C(blockinfile), with C({mark}).
    type: list
    elements: dict
    default: []
  users:
    description: Users whose account to report in RV(node_facts.users).
    type: list
    elements: str
    default: []
  groups:
    description: Groups to report in RV(node_facts.groups) when they exist.
    type: list
    elements: str
    default: []
  containerd_address:
    description:
      - The socket of a containerd to ask, with C(ctr), its version and the version of C(ctr) itself, reported in
        RV(node_facts.containerd). Nothing is asked when empty or when C(ctr) is not installed.
    type: str
    default: ""
  containerd_images:
    description:
      - Image references to look for in containerd's C(k8s.io) namespace (with O(containerd_address)); those it
        does not have are reported as C(images_missing) in RV(node_facts.containerd).
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: The module only reads, so it runs unchanged in check mode.
  diff_mode:
    support: none
    description: The module changes nothing, so there is nothing to show.
notes:
  - Reads C(/proc), C(/sys), C(/etc/os-release), C(/etc/hostname), C(/etc/fstab) and C(/var/lib/dpkg/status),
    and the files named in O(paths), O(contents) and O(blocks); runs C(ip), C(timedatectl) and C(systemctl) when present.
"""

EXAMPLES = r"""
- name: Read what preflight needs from every node
  slipway.cluster.node_facts:
    kernel_modules: [overlay, br_netfilter, nf_conntrack]
  register: __preflight_node_facts

- name: Show the cgroup version
  ansible.builtin.debug:
    msg: "{{ __preflight_node_facts.node_facts.cgroup_version }}"
"""

RETURN = r"""
node_facts:
  description: What was read from the node.
  returned: always
  type: dict
  contains:
    os:
      description: Fields of C(/etc/os-release).
      type: dict
      returned: always
      sample: {id: debian, version_id: "12", pretty_name: Debian GNU/Linux 12 (bookworm), version_codename: bookworm}
    arch:
      description: Machine architecture as the kernel reports it.
      type: str
      returned: always
      sample: x86_64
    kernel:
      description: Kernel release.
      type: str
      returned: always
      sample: 6.1.0-18-amd64
    hostname:
      description: The node's current hostname.
      type: str
      returned: always
      sample: cp1
    static_hostname:
      description: The hostname in C(/etc/hostname), the one the node boots with; empty when the file is missing.
      type: str
      returned: always
      sample: cp1
    cpus:
      description: CPUs this node may use.
      type: int
      returned: always
      sample: 4
    memory_mb:
      description: Total memory in MB.
      type: int
      returned: always
      sample: 7954
    swap:
      description: Active swap, and the lines of C(/etc/fstab) that mount swap and are not commented out.
      type: dict
      returned: always
      sample: {total_mb: 0, devices: [], fstab: []}
    cgroup_version:
      description: 2 on the unified hierarchy, 1 otherwise.
      type: int
      returned: always
      sample: 2
    container:
      description: Whether the node is itself a container (its clock is then the host's).
      type: bool
      returned: always
      sample: false
    virtualization:
      description: What C(systemd-detect-virt) reports, or C(none).
      type: str
      returned: always
      sample: kvm
    time_sync:
      description: Whether the clock is synchronized and which time services are active.
      type: dict
      returned: always
      sample: {synchronized: true, services: [chrony]}
    listening:
      description: Listening TCP sockets.
      type: list
      elements: dict
      returned: always
      sample: [{address: 0.0.0.0, port: 22, process: sshd}]
    capabilities:
      description: Effective capabilities that matter to container runtimes.
      type: dict
      returned: always
      sample: {sys_admin: true, sys_resource: true, net_admin: true}
    addresses:
      description: Interface addresses.
      type: list
      elements: dict
      returned: always
      sample: [{interface: eth0, address: 10.0.0.11, prefix: 24}]
    kernel_modules:
      description: For each requested module, C(loaded), C(builtin) (built into the kernel), C(available) (can be loaded) or C(missing).
      type: dict
      returned: always
      sample: {overlay: builtin, br_netfilter: loaded}
    packages:
      description:
        - Names of the Debian packages dpkg has installed (status C(installed)), sorted.
        - Empty on a system without C(/var/lib/dpkg/status).
      type: list
      elements: str
      returned: always
      sample: [conntrack, containerd, iptables]
    services:
      description:
        - Which of the units named in O(services) are active, and which are enabled to start at boot.
        - Both empty without C(systemctl).
      type: dict
      returned: always
      sample: {active: [containerd.service, kubelet.service], enabled: [containerd.service, kubelet.service]}
    files:
      description:
        - For each path of O(paths) that exists, its C(type) (C(file), C(directory) or C(other)), C(mode) (an octal
          string), C(owner) and C(group) (names, or the numbers when they have none) and, for a regular file, its
          C(sha256). A path that does not exist is left out.
      type: dict
      returned: always
      sample: {/etc/sysctl.d/99-kubernetes.conf: {type: file, mode: "0644", owner: root, group: root, sha256: 9f86d08}}
    contents:
      description:
        - For each path of O(contents), its text; V(null) when it is not there (or is not a regular file of at most
          256 KiB).
      type: dict
      returned: always
      sample: {/var/lib/kubelet/config.yaml: "apiVersion: kubelet.config.k8s.io/v1beta1\n", /etc/missing.yaml: null}
    blocks:
      description:
        - For each entry of O(blocks), by path and then by marker, the sha256 of the lines between its C(BEGIN) and
          C(END) marker lines, joined with newlines. Left out when the file or either marker line is missing, or
          when a marker line is there more than once.
      type: dict
      returned: always
      sample: {/etc/hosts: {"# {mark} slipway.cluster nodes": 2c26b46}}
    users:
      description: For each user of O(users) that exists, its C(uid), primary C(group) name, C(home) and C(shell).
      type: dict
      returned: always
      sample: {etcd: {uid: 998, group: etcd, home: /var/lib/etcd, shell: /usr/sbin/nologin}}
    containerd:
      description:
        - With O(containerd_address), what C(ctr version) reports of itself (C(client_version)) and of the daemon
          (C(server_version), empty when it does not answer), and which of O(containerd_images) containerd does not
          have (C(images_missing), left out when they could not be listed). Empty without O(containerd_address) or
          without C(ctr).
      type: dict
      returned: always
      sample: {client_version: v2.3.7, server_version: v2.3.7, images_missing: []}
    groups:
      description: The groups of O(groups) that exist, sorted.
      type: list
      elements: str
      returned: always
      sample: [etcd]
"""

import glob
import grp
import hashlib
import json
import os
import platform
import pwd
import socket
import stat
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.slipway.cluster.plugins.module_utils._kernel import module_states

_TIME_SERVICES = ("chrony", "chronyd", "systemd-timesyncd", "ntp", "ntpd", "ntpsec", "openntpd")
# The services the roles start and enable, whose state lets a rerun skip starting them.
_SERVICES = ("containerd.service", "kubelet.service", "haproxy.service", "keepalived.service", "etcd.service")
_CAPS = {"net_admin": 12, "sys_admin": 21, "sys_resource": 24}


def _read(path: str, default: str = "") -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return default


def os_release() -> dict:
    result = {}
    for line in _read("/etc/os-release").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            result[key.strip().lower()] = value.strip().strip('"')
    return result


def meminfo() -> dict:
    values = {}
    for line in _read("/proc/meminfo").splitlines():
        key, dummy, rest = line.partition(":")
        parts = rest.split()
        if parts:
            values[key] = int(parts[0]) // 1024
    return values


def swap_devices() -> list:
    lines = _read("/proc/swaps").splitlines()[1:]
    return [line.split()[0] for line in lines if line.strip()]


def installed_packages(status: str) -> list:
    """Names of the packages whose dpkg status (the third word of Status:) is installed."""
    names = set()
    for stanza in status.split("\n\n"):
        name = state = ""
        for line in stanza.splitlines():
            if line.startswith("Package:"):
                name = line[8:].strip()
            elif line.startswith("Status:"):
                words = line[7:].split()
                state = words[2] if len(words) == 3 else ""
        if name and state == "installed":
            names.add(name)
    return sorted(names)


def fstab_swap(fstab: str) -> list:
    """Lines of an fstab that mount swap (third field) and are not commented out."""
    result = []
    for line in fstab.splitlines():
        fields = line.split()
        if len(fields) >= 3 and not fields[0].startswith("#") and fields[2] == "swap":
            result.append(line)
    return result


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 0


def capabilities() -> dict:
    eff = 0
    for line in _read("/proc/self/status").splitlines():
        if line.startswith("CapEff:"):
            eff = int(line.split()[1], 16)
    return {name: bool(eff >> bit & 1) for name, bit in _CAPS.items()}


def _socket_inodes() -> dict:
    owners: dict = {}
    for fd in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            pid = fd.split("/")[2]
            owners.setdefault(target[8:-1], pid)
    return owners


def _hex_address(text: str) -> str:
    raw = bytes.fromhex(text)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def listening(attempts: int = 3, pause: float = 0.5) -> list:
    """Listening TCP sockets with the name of the process that holds each.

    A process that restarts between the read of /proc/net/tcp and the scan of the processes' file
    descriptors (a controller manager that lost its lease, a static pod the kubelet restarts) leaves
    a socket with no owner for a moment: the scan is made again, up to ``attempts`` times, before a
    socket is reported with no process.
    """
    result = _listening_once()
    for dummy in range(attempts - 1):
        if all(sock["process"] for sock in result):
            break
        time.sleep(pause)
        result = _listening_once()
    return result


def _listening_once() -> list:
    owners = None
    result = []
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in _read(path).splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A":
                continue
            if owners is None:
                owners = _socket_inodes()
            address, dummy, port = fields[1].partition(":")
            pid = owners.get(fields[9])
            process = _read(f"/proc/{pid}/comm").strip() if pid else ""
            result.append({"address": _hex_address(address), "port": int(port, 16), "process": process})
    return result


def addresses(module: AnsibleModule) -> list:
    ip_bin = module.get_bin_path("ip")
    if not ip_bin:
        return []
    rc, out, dummy = module.run_command([ip_bin, "-j", "addr", "show"])
    if rc != 0:
        return []
    result = []
    for link in json.loads(out or "[]"):
        for info in link.get("addr_info", []):
            if info.get("scope") == "host" and link.get("ifname") != "lo":
                continue
            result.append({"interface": link.get("ifname", ""), "address": info.get("local", ""), "prefix": info.get("prefixlen", 0)})
    return result


def virtualization(module: AnsibleModule) -> tuple:
    detect = module.get_bin_path("systemd-detect-virt")
    kind = "none"
    container = os.path.exists("/run/.containerenv") or os.path.exists("/.dockerenv")
    if detect:
        out = module.run_command([detect, "--container"])[1]
        if out.strip() and out.strip() != "none":
            return out.strip(), True
        out = module.run_command([detect])[1]
        kind = out.strip() or "none"
    marker = _read("/run/systemd/container").strip()
    if marker:
        return marker, True
    return kind, container


def unit_states(module: AnsibleModule, names: list) -> dict:
    """{name: (ActiveState, UnitFileState)} of each unit, from one `systemctl show` call; {} without systemctl."""
    systemctl = module.get_bin_path("systemctl")
    if not systemctl or not names:
        return {}
    rc, out, dummy = module.run_command([systemctl, "show", "--property=ActiveState,UnitFileState", "--", *names])
    return parse_unit_states(names, out) if rc == 0 else {}


def parse_unit_states(names: list, out: str) -> dict:
    """`systemctl show` prints one block per unit, in the order asked, separated by a blank line."""
    blocks = [dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
              for block in out.strip().split("\n\n")] if out.strip() else []
    return {name: (block.get("ActiveState", ""), block.get("UnitFileState", ""))
            for name, block in zip(names, blocks)}


def time_sync(module: AnsibleModule, states: dict) -> dict:
    synchronized = False
    timedatectl = module.get_bin_path("timedatectl")
    if timedatectl:
        rc, out, dummy = module.run_command([timedatectl, "show", "-p", "NTPSynchronized", "--value"])
        synchronized = rc == 0 and out.strip() == "yes"
    services = [name for name in _TIME_SERVICES if states.get(name, ("",))[0] == "active"]
    return {"synchronized": synchronized, "services": services}


def services(names: list, states: dict) -> dict:
    return {
        "active": sorted(name for name in names if states.get(name, ("",))[0] == "active"),
        "enabled": sorted(name for name in names if states.get(name, ("", ""))[1] == "enabled"),
    }


def _name(lookup, number: int):
    try:
        return lookup(number)[0]
    except KeyError:
        return number


def path_states(paths: list, secret: tuple = ()) -> dict:
    """{path: {type, mode, owner, group[, sha256]}} of each path that exists (links followed); no sha256 for those
    in ``secret``."""
    result = {}
    for path in list(paths) + [path for path in secret if path not in paths]:
        try:
            info = os.stat(path)
        except OSError:
            continue
        kind = "file" if stat.S_ISREG(info.st_mode) else "directory" if stat.S_ISDIR(info.st_mode) else "other"
        entry = {"type": kind, "mode": f"{stat.S_IMODE(info.st_mode):04o}",
                 "owner": _name(pwd.getpwuid, info.st_uid), "group": _name(grp.getgrgid, info.st_gid)}
        if kind == "file" and path not in secret:
            digest = hashlib.sha256()
            try:
                with open(path, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)
            except OSError:
                continue
            entry["sha256"] = digest.hexdigest()
        result[path] = entry
    return result


_CONTENT_LIMIT = 256 * 1024


def file_contents(paths: list) -> dict:
    """{path: text, or None where there is no regular file of at most _CONTENT_LIMIT bytes}."""
    result: dict = {}
    for path in paths:
        try:
            small = os.path.isfile(path) and os.path.getsize(path) <= _CONTENT_LIMIT
        except OSError:
            small = False
        result[path] = _read(path) if small else None
    return result


def block_digest(text: str, marker: str):
    """The sha256 of the lines between the BEGIN and END lines of ``marker`` in ``text``, as blockinfile writes
    them; None unless each marker line is there exactly once, BEGIN first."""
    lines = text.splitlines()
    begin, end = marker.replace("{mark}", "BEGIN"), marker.replace("{mark}", "END")
    if lines.count(begin) != 1 or lines.count(end) != 1:
        return None
    first, last = lines.index(begin), lines.index(end)
    if first > last:
        return None
    return hashlib.sha256("\n".join(lines[first + 1:last]).encode("utf-8")).hexdigest()


def block_states(blocks: list) -> dict:
    result: dict = {}
    for entry in blocks:
        path, marker = entry.get("path"), entry.get("marker")
        if not path or not marker:
            continue
        digest = block_digest(_read(path), marker) if os.path.isfile(path) else None
        if digest is not None:
            result.setdefault(path, {})[marker] = digest
    return result


def user_states(names: list) -> dict:
    result = {}
    for name in names:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        result[name] = {"uid": entry.pw_uid, "group": _name(grp.getgrgid, entry.pw_gid),
                        "home": entry.pw_dir, "shell": entry.pw_shell}
    return result


def group_states(names: list) -> list:
    found = []
    for name in names:
        try:
            grp.getgrnam(name)
        except KeyError:
            continue
        found.append(name)
    return sorted(set(found))


def parse_ctr_version(out: str) -> tuple:
    """(client, server) versions from `ctr version`: the Version line of its Client and of its Server section."""
    versions = {"client": "", "server": ""}
    section = ""
    for line in out.splitlines():
        stripped = line.strip()
        if stripped in ("Client:", "Server:"):
            section = stripped[:-1].lower()
        elif section and stripped.startswith("Version:"):
            versions[section] = versions[section] or stripped[len("Version:"):].strip()
    return versions["client"], versions["server"]


def containerd_state(module: AnsibleModule, address: str, images: list) -> dict:
    """The versions `ctr version` reports, and which of ``images`` containerd's k8s.io namespace lacks."""
    ctr = module.get_bin_path("ctr", opt_dirs=["/usr/local/bin"]) if address else None
    if not ctr:
        return {}
    out = module.run_command([ctr, "--address", address, "version"])[1]
    client, server = parse_ctr_version(out)
    result = {"client_version": client, "server_version": server}
    if server and images:
        rc, listed, dummy = module.run_command([ctr, "--address", address, "--namespace", "k8s.io", "images", "list",
                                                "--quiet"])
        if rc == 0:
            present = set(listed.split())
            result["images_missing"] = [ref for ref in dict.fromkeys(images) if ref not in present]
    return result


def gather(module: AnsibleModule) -> dict:
    mem = meminfo()
    names = list(dict.fromkeys(module.params["services"]))
    states = unit_states(module, names + [name for name in _TIME_SERVICES if name not in names])
    virt, container = virtualization(module)
    return {
        "os": os_release(),
        "arch": platform.machine(),
        "kernel": platform.release(),
        "hostname": socket.gethostname(),
        "static_hostname": _read("/etc/hostname").strip(),
        "cpus": cpus(),
        "memory_mb": mem.get("MemTotal", 0),
        "swap": {"total_mb": mem.get("SwapTotal", 0), "devices": swap_devices(), "fstab": fstab_swap(_read("/etc/fstab"))},
        "cgroup_version": 2 if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else 1,
        "container": container,
        "virtualization": virt,
        "time_sync": time_sync(module, states),
        "listening": listening(),
        "capabilities": capabilities(),
        "addresses": addresses(module),
        "kernel_modules": module_states(module.params["kernel_modules"]),
        "packages": installed_packages(_read("/var/lib/dpkg/status")),
        "services": services(names, states),
        "files": path_states(module.params["paths"], tuple(module.params["secret_paths"])),
        "contents": file_contents(module.params["contents"]),
        "blocks": block_states(module.params["blocks"]),
        "users": user_states(module.params["users"]),
        "groups": group_states(module.params["groups"]),
        "containerd": containerd_state(module, module.params["containerd_address"], module.params["containerd_images"]),
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "kernel_modules": {"type": "list", "elements": "str", "default": ["overlay", "br_netfilter"]},
            "services": {"type": "list", "elements": "str", "default": list(_SERVICES)},
            "paths": {"type": "list", "elements": "path", "default": []},
            # Paths, not secrets: the files they name are read without their digest.
            "secret_paths": {"type": "list", "elements": "path", "default": [], "no_log": False},
            "contents": {"type": "list", "elements": "path", "default": []},
            "blocks": {"type": "list", "elements": "dict", "default": []},
            "users": {"type": "list", "elements": "str", "default": []},
            "groups": {"type": "list", "elements": "str", "default": []},
            "containerd_address": {"type": "str", "default": ""},
            "containerd_images": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    module.exit_json(changed=False, node_facts=gather(module))


if __name__ == "__main__":
    main()
