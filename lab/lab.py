#!/usr/bin/env python
"""The slipway local lab: Kubernetes-ready "machines" as podman containers.

Each node is a privileged container running systemd and sshd, with a static address on
podman's default network, reached by Ansible over SSH like a real host. Run as root with the
controller virtualenv's python (it needs PyYAML):

    lab.py image
    lab.py up --cluster lab --node cp1:kube_control_plane,etcd --node w1:kube_node:trixie
    lab.py status [--cluster lab]
    lab.py down --cluster lab

See lab/README.md for what the node settings are and why.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import fcntl
import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

LAB_DIR = Path(__file__).resolve().parent
REPO_DIR = LAB_DIR.parent
DEFAULT_INVENTORY = REPO_DIR / "inventories" / "lab" / "hosts.yml"
# Debian releases a node may run (`--node NAME:GROUPS:RELEASE`); the first is a node's default unless
# SLIPWAY_LAB_RELEASE names another. Each has its own image, built by build-image.sh.
RELEASES = ("bookworm", "trixie")
DEFAULT_RELEASE = os.environ.get("SLIPWAY_LAB_RELEASE", RELEASES[0])
IMAGE = os.environ.get("SLIPWAY_LAB_IMAGE", "localhost/slipway/node:bookworm")
NETWORK = "podman"  # podman's default network (10.88.0.0/16); never removed by anyone
SUBNETS = tuple(ipaddress.ip_network(f"10.88.{i}.0/24") for i in range(100, 200))
FIRST_HOST, VIP_HOST = 11, 250  # nodes get .11 upwards; .250 is kept free for a virtual IP
LABEL = "io.slipway.lab"
CORE_GROUPS = ("kube_control_plane", "kube_node", "etcd")
SSH_COMMON_ARGS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
INVENTORY_HEADER = "# Written by lab/lab.py"
SSH_TIMEOUT = 90.0
NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
GROUP_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LabError(Exception):
    """A problem to report to the user in one line."""


# ---------------------------------------------------------------------------- environment


def lab_home() -> Path:
    home = os.environ.get("SLIPWAY_LAB_HOME") or str(Path.home() / ".cache" / "slipway-lab")
    return Path(home).resolve()


def podman_env() -> dict[str, str]:
    """podman's defaults fail here (ulimits above the hard limit, crun on cgroup v1)."""
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(LAB_DIR / "containers.conf"))
    return env


def check_host() -> None:
    if shutil.which("podman") is None:
        raise LabError("podman is not installed: apt-get install -y podman runc (see lab/README.md)")
    if os.geteuid() != 0:
        raise LabError("the lab needs root (privileged systemd containers with static IPs): run it as root")


# Every node shares the machine's kernel, and every systemd, containerd and kubelet in them takes
# inotify instances from the same per-user budget: the kernel's 128 runs out with a few nodes
# (systemd then cannot start sshd; the kubelet dies with "inotify_init: too many open files").
INOTIFY_MINIMUMS = {"fs.inotify.max_user_instances": 8192, "fs.inotify.max_user_watches": 524288}


def raise_kernel_limits(proc_sys: Path = Path("/proc/sys")) -> list[str]:
    """Raise (never lower) the machine's inotify limits; one line per limit raised."""
    notes = []
    for key, minimum in INOTIFY_MINIMUMS.items():
        path = proc_sys / key.replace(".", "/")
        current = int(path.read_text(encoding="utf-8").split()[0])
        if current < minimum:
            try:
                path.write_text(f"{minimum}\n", encoding="utf-8")
            except OSError as exc:
                raise LabError(f"cannot raise {key} from {current} to {minimum} ({exc.strerror}): "
                               f"run sysctl -w {key}={minimum} as root") from exc
            notes.append(f"raised {key} from {current} to {minimum} on this machine (the nodes share its kernel)")
    return notes


# The lab is offline: its nodes reach each other, this machine's DNS resolver, and the package registries through
# podman's NAT, nothing else. A private address that is none of these (a Service's ClusterIP on a port the Service no
# longer has, a pod subnet no node has yet) would otherwise leave through this machine's uplink, whose network may
# answer any TCP connection: the conformance suite's "Services should serve endpoints on same port and different
# protocols" then found a removed port still answering. On a machine's own network nobody has those addresses; here
# the forwarded packet is refused (ICMP net unreachable) by a chain of the lab's own first in this machine's FORWARD
# chain, made by `up`. The resolvers of /etc/resolv.conf pass: the nodes (and containers like the trixie controller
# of tests/trixie-controller.sh) resolve the registries' names through them, and they may have private addresses.
LAB_CIDR = "10.88.0.0/16"
PRIVATE_CIDRS = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
FIREWALL_CHAIN = "SLIPWAY-LAB"
RESOLV_CONF = Path("/etc/resolv.conf")


def nameservers(resolv_conf: Path = RESOLV_CONF) -> list[str]:
    """The IPv4 resolvers of resolv.conf, in its order."""
    found = []
    with contextlib.suppress(OSError):
        for line in resolv_conf.read_text(encoding="utf-8").splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0] == "nameserver":
                with contextlib.suppress(ValueError):
                    if ipaddress.ip_address(fields[1]).version == 4 and fields[1] not in found:
                        found.append(fields[1])
    return found


def firewall_rules(resolvers: Sequence[str] = ()) -> list[list[str]]:
    """The lab chain's rules, in order: the lab's own network and the resolvers pass, any other private address is
    refused."""
    rules = [["-s", LAB_CIDR, "-d", LAB_CIDR, "-j", "RETURN"]]
    rules += [["-s", LAB_CIDR, "-d", f"{address}/32", "-j", "RETURN"] for address in resolvers]
    rules += [["-s", LAB_CIDR, "-d", cidr, "-j", "REJECT", "--reject-with", "icmp-net-unreachable"]
              for cidr in PRIVATE_CIDRS]
    return rules


def keep_offline(run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
                 resolv_conf: Path = RESOLV_CONF) -> list[str]:
    """Make the lab chain (its rules exactly, in order) and its jump from FORWARD where they differ; a line per
    change."""
    def iptables(*args: str) -> subprocess.CompletedProcess:
        return run(["iptables", "-w", *args], check=False, capture_output=True, text=True)

    def must(*args: str) -> None:
        if iptables(*args).returncode != 0:
            raise LabError(f"iptables {' '.join(args)} failed: the lab needs root and iptables on this machine")

    notes = []
    wanted = firewall_rules(nameservers(resolv_conf))
    listed = iptables("-S", FIREWALL_CHAIN)
    if listed.returncode != 0:
        must("-N", FIREWALL_CHAIN)
        notes.append(f"made the iptables chain {FIREWALL_CHAIN} on this machine (lab traffic to other private "
                     "addresses is refused)")
        have: list[str] = []
    else:
        have = [line for line in listed.stdout.splitlines() if line.startswith(f"-A {FIREWALL_CHAIN} ")]
    if have != [" ".join(["-A", FIREWALL_CHAIN, *rule]) for rule in wanted]:
        must("-F", FIREWALL_CHAIN)
        for rule in wanted:
            must("-A", FIREWALL_CHAIN, *rule)
        if have:
            notes.append(f"rewrote the rules of {FIREWALL_CHAIN} on this machine")
    if iptables("-C", "FORWARD", "-j", FIREWALL_CHAIN).returncode != 0:
        must("-I", "FORWARD", "1", "-j", FIREWALL_CHAIN)
        notes.append(f"FORWARD now starts with {FIREWALL_CHAIN} on this machine")
    return notes


# A node's disk, all of it in podman's storage on this machine: the bundle's images twice (containerd's
# content store holds every archive, and its snapshots unpack the images the node runs), the bundle's
# binaries, and room for etcd, logs and the pods' writable layers. Measured on the 5-node lab with
# KubeSphere on (lab/README.md, "Disk"): 1.3 GB of images and 0.44 GB of binaries, 2.5 GB per control plane.
NODE_DISK_MARGIN = 512 * 1024**2
NODE_DISK_WITHOUT_BUNDLE = 2 * 1024**3


def tree_size(path: Path) -> int:
    """Bytes of the files under path, following the bundle's links into the build's cache."""
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(dirpath, name)).st_size
    return total


def node_disk_need(bundle_dir: str | None) -> int:
    """Bytes one new node takes from the machine's disk, from the bundle it installs from."""
    if not bundle_dir or not Path(bundle_dir).is_dir():
        return NODE_DISK_WITHOUT_BUNDLE
    bundle = Path(bundle_dir)
    return 2 * tree_size(bundle / "images") + tree_size(bundle / "bin") + NODE_DISK_MARGIN


def gigabytes(size: float) -> str:
    return f"{size / 1024**3:.1f} GB"


def check_space(new_nodes: int, need_each: int, where: str, free: int) -> None:
    """Refuse before any node is made when the new nodes would fill the disk mid-install."""
    need = new_nodes * need_each
    if need > free:
        raise LabError(
            f"{new_nodes} new node(s) need about {gigabytes(need)} on {where} (podman's storage: each node "
            f"imports the bundle's images and binaries, about {gigabytes(need_each)}), and it has "
            f"{gigabytes(free)} free: free space there, or make fewer nodes (LAB_NODES)")


def podman_storage() -> str:
    return podman("info", "--format", "{{.Store.GraphRoot}}").strip()


def podman(*args: str) -> str:
    proc = subprocess.run(
        ["podman", *args], check=False, env=podman_env(), capture_output=True, text=True
    )
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["no error output"])[-1]
        raise LabError(f"podman {args[0]} failed: {detail}")
    return proc.stdout


def parallel(func: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """Run func over items in threads; the first exception is raised after all finish."""
    if not items:
        return []
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(items), 16)) as pool:
        futures = [pool.submit(func, item) for item in items]
    return [future.result() for future in futures]


@contextlib.contextmanager
def locked(home: Path, name: str = "lock") -> Iterator[None]:
    """Serialise concurrent runs (parallel molecule scenarios) around shared work."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / name, "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# ---------------------------------------------------------------------------- image and key


def image_for(release: str) -> str:
    """The node image of a Debian release: $SLIPWAY_LAB_IMAGE is bookworm's; another release's has its tag
    (localhost/slipway/node:trixie), or the same name with -RELEASE when $SLIPWAY_LAB_IMAGE names its own tag."""
    if release == RELEASES[0]:
        return IMAGE
    if IMAGE.endswith(":" + RELEASES[0]):
        return IMAGE[: -len(RELEASES[0])] + release
    return f"{IMAGE}-{release}"


def ensure_image(home: Path, force: bool = False, release: str = RELEASES[0]) -> bool:
    """Build the node image of a release when missing or stale; True when it was built."""
    script = LAB_DIR / "build-image.sh"
    image = image_for(release)
    env = {**podman_env(), "SLIPWAY_LAB_IMAGE": image, "SLIPWAY_LAB_RELEASE": release, "SLIPWAY_LAB_HOME": str(home)}

    def current() -> bool:
        return subprocess.run([str(script), "--check"], check=False, env=env).returncode == 0

    if not force and current():
        return False
    with locked(home, "image.lock"):  # one build at a time; a waiting run reuses its result
        if not force and current():
            return False
        log = home / ("build-image.log" if release == RELEASES[0] else f"build-image-{release}.log")
        build_image(script, env, log)
    return True


def build_image(script: Path, env: dict[str, str], log: Path) -> None:
    print(f"building node image {env['SLIPWAY_LAB_IMAGE']} with debootstrap (1-3 min), log: {log}", flush=True)
    with open(log, "w", encoding="utf-8") as out:
        args = [str(script), "--force"]
        rc = subprocess.run(args, check=False, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise LabError(f"building the node image failed (exit {rc}): see {log}")


def ensure_key(home: Path) -> Path:
    """The lab's SSH key pair, made once; its public half is mounted into every node."""
    key = home / "ssh" / "id_ed25519"
    if key.exists() and key.with_suffix(".pub").exists():
        return key
    if shutil.which("ssh-keygen") is None:
        raise LabError("ssh-keygen is not installed: apt-get install -y openssh-client")
    key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "slipway-lab", "-f", str(key)],
        check=True,
    )
    return key


# ---------------------------------------------------------------------------- model


@dataclasses.dataclass
class Node:
    name: str
    groups: tuple[str, ...]
    ip: str = ""
    release: str = RELEASES[0]


@dataclasses.dataclass
class Cluster:
    name: str
    subnet: str
    nodes: dict[str, Node]
    inventory: str = ""
    # Directories of this machine mounted into every node, as SRC:DST[:ro] (podman's --volume).
    volumes: tuple[str, ...] = ()

    @property
    def vip(self) -> str:
        return str(ipaddress.ip_network(self.subnet)[VIP_HOST])

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Cluster:
        data = json.loads(text)
        nodes = {
            name: Node(name, tuple(node["groups"]), node["ip"], node.get("release", RELEASES[0]))
            for name, node in data["nodes"].items()
        }
        return cls(data["name"], data["subnet"], nodes, data.get("inventory", ""), tuple(data.get("volumes") or ()))


@dataclasses.dataclass
class Container:
    name: str
    cluster: str
    node: str
    ip: str
    state: str
    image_id: str
    release: str = RELEASES[0]


def container_name(cluster: str, node: str) -> str:
    return f"slipway-{cluster}-{node}"


def parse_node(spec: str) -> Node:
    """NAME:GROUP[,GROUP...][:RELEASE]"""
    name, _colon, rest = spec.partition(":")
    groups_text, _colon, release = rest.partition(":")
    release = release or DEFAULT_RELEASE
    if release not in RELEASES:
        raise LabError(f"bad release {release!r} in --node {spec!r}: use one of {', '.join(RELEASES)}")
    groups = tuple(group for group in groups_text.split(",") if group)
    if not NAME_RE.match(name):
        raise LabError(f"bad node name {name!r} in --node {spec!r}: use lowercase letters, digits and '-'")
    for group in groups:
        if not GROUP_RE.match(group):
            raise LabError(f"bad group name {group!r} in --node {spec!r}: use letters, digits and '_'")
        if group == "k8s_cluster":
            raise LabError("k8s_cluster is made from kube_control_plane and kube_node: do not list it")
    return Node(name, tuple(dict.fromkeys(groups)), release=release)


def parse_volume(spec: str) -> str:
    """SRC:DST[:ro]: an absolute directory of this machine that exists, an absolute path in the node."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "ro"):
        raise LabError(f"bad --volume {spec!r}: write SRC:DST or SRC:DST:ro (absolute paths)")
    source, target = parts[0], parts[1]
    if not (source.startswith("/") and target.startswith("/")):
        raise LabError(f"bad --volume {spec!r}: SRC and DST must be absolute paths")
    if not os.path.isdir(source):
        raise LabError(f"bad --volume {spec!r}: {source} is not a directory of this machine")
    return spec


def parse_nodes(specs: Iterable[str]) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for spec in specs:
        node = parse_node(spec)
        if node.name in nodes:
            raise LabError(f"node {node.name!r} is given twice")
        nodes[node.name] = node
    if not nodes:
        raise LabError("give at least one --node NAME:GROUP[,GROUP...][:RELEASE]")
    return nodes


# Lab nodes are containers on one host disk: the kubelets' image garbage collection and disk-pressure
# eviction would measure the host's disk, filled by builds beside the lab (kubelet counts capacity
# minus available, so 15% free on the host removed the pause and test images from every node).
LAB_KUBELET_CONFIGURATION: dict[str, Any] = {
    "imageGCHighThresholdPercent": 100,
    "imageGCLowThresholdPercent": 99,
    "evictionHard": {"imagefs.available": "1%", "nodefs.available": "1%", "nodefs.inodesFree": "1%",
                     "memory.available": "100Mi"},
}


def parse_vars(pairs: Iterable[str]) -> dict[str, Any]:
    """KEY=VALUE, the value read as YAML (so 3 is a number and [a, b] a list)."""
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not GROUP_RE.match(key):
            raise LabError(f"bad --vars {pair!r}: use KEY=VALUE with KEY a valid variable name")
        try:
            result[key] = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            result[key] = value
    return result


# ---------------------------------------------------------------------------- state


def state_path(home: Path, cluster: str) -> Path:
    return home / "clusters" / f"{cluster}.json"


def load_state(home: Path, cluster: str) -> Cluster | None:
    path = state_path(home, cluster)
    return Cluster.from_json(path.read_text(encoding="utf-8")) if path.exists() else None


def load_all_states(home: Path) -> list[Cluster]:
    folder = home / "clusters"
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return [Cluster.from_json(path.read_text(encoding="utf-8")) for path in paths]


def save_state(home: Path, cluster: Cluster) -> bool:
    return write_if_changed(state_path(home, cluster.name), cluster.to_json())


def write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True


def list_containers(cluster: str | None = None) -> list[Container]:
    selector = f"label={LABEL}.cluster" + (f"={cluster}" if cluster else "")
    rows = json.loads(podman("ps", "-a", "--filter", selector, "--format", "json") or "[]")
    return [
        Container(
            name=row["Names"][0],
            cluster=row["Labels"].get(f"{LABEL}.cluster", ""),
            node=row["Labels"].get(f"{LABEL}.node", ""),
            ip=row["Labels"].get(f"{LABEL}.ip", ""),
            state=row["State"],
            image_id=row["ImageID"],
            release=row["Labels"].get(f"{LABEL}.release", RELEASES[0]),
        )
        for row in rows
    ]


# ---------------------------------------------------------------------------- addresses


def subnet_of(ip: str) -> str:
    return str(ipaddress.ip_network(f"{ip}/24", strict=False))


def choose_subnet(name: str, old: Cluster | None, mine: list[Container], others: list[Cluster],
                  all_containers: list[Container]) -> str:
    """Keep the cluster's subnet (from its state, else its containers), else take a free one."""
    if old:
        return old.subnet
    for container in mine:
        if container.ip:
            return subnet_of(container.ip)
    taken = {cluster.subnet for cluster in others}
    taken |= {subnet_of(c.ip) for c in all_containers if c.ip and c.cluster != name}
    for subnet in SUBNETS:
        if str(subnet) not in taken:
            return str(subnet)
    raise LabError(
        f"no free lab subnet: {SUBNETS[0]}..{SUBNETS[-1]} are all taken by other lab clusters; "
        "remove one with `lab.py down --cluster NAME` (see `lab.py status`)"
    )


def assign_addresses(subnet: str, wanted: dict[str, Node], old: Cluster | None,
                     mine: list[Container]) -> None:
    """Give each wanted node its remembered address, else the lowest free one."""
    network = ipaddress.ip_network(subnet)
    known = {c.node: c.ip for c in mine if c.ip}
    if old:
        known.update({n.name: n.ip for n in old.nodes.values()})
    for node in wanted.values():
        ip = known.get(node.name, "")
        if ip and ipaddress.ip_address(ip) in network:
            node.ip = ip
    used = {node.ip for node in wanted.values() if node.ip}
    free = (str(network[i]) for i in range(FIRST_HOST, VIP_HOST) if str(network[i]) not in used)
    for node in wanted.values():
        if not node.ip:
            node.ip = next(free, "")
            if not node.ip:
                raise LabError(f"address range exhausted: {subnet} has no free address for {node.name}")


def plan_cluster(home: Path, name: str, wanted: dict[str, Node], inventory: Path,
                 volumes: tuple[str, ...] = ()) -> Cluster:
    """Decide subnet and addresses under the lab lock and record them in the state file."""
    with locked(home):
        old = load_state(home, name)
        all_containers = list_containers()
        mine = [c for c in all_containers if c.cluster == name]
        others = [c for c in load_all_states(home) if c.name != name]
        subnet = choose_subnet(name, old, mine, others, all_containers)
        assign_addresses(subnet, wanted, old, mine)
        cluster = Cluster(name, subnet, wanted, str(inventory), volumes)
        save_state(home, cluster)
    return cluster


# ---------------------------------------------------------------------------- nodes


def mac_for(ip: str) -> str:
    """A fixed MAC per address: a node made again with the same address (down, up) is
    reachable at once instead of after the machine's stale ARP entry for it expires."""
    return "02:42:" + ":".join(f"{byte:02x}" for byte in ipaddress.ip_address(ip).packed)


def run_node(cluster: Cluster, node: Node, key: Path) -> str:
    podman(*node_run_args(cluster, node, key))
    return node.name


def node_run_args(cluster: Cluster, node: Node, key: Path) -> list[str]:
    """`podman run`'s arguments for a node: the cluster's volumes come before the image."""
    mounts = [arg for volume in cluster.volumes for arg in ("--volume", volume)]
    return [
        "run", "--detach", "--name", container_name(cluster.name, node.name),
        "--hostname", node.name,
        "--label", f"{LABEL}.cluster={cluster.name}",
        "--label", f"{LABEL}.node={node.name}",
        "--label", f"{LABEL}.ip={node.ip}",
        "--label", f"{LABEL}.release={node.release}",
        "--privileged",                  # systemd sandboxing, mounts, sysctls, nested containerd
        "--systemd=always",              # systemd as PID 1 (image CMD /sbin/init)
        "--cgroupns=host",               # never privileged + private cgroupns (systemd escapes)
        "--no-hosts",                    # /etc/hosts a plain file (Ansible renames onto it)
        "--network", NETWORK, "--ip", node.ip, "--mac-address", mac_for(node.ip),
        # overlayfs snapshotter not on overlay; a volume, not a tmpfs, so that a node stopped and
        # started again keeps its images as a machine does after a reboot
        "--volume", "/var/lib/containerd",
        "--volume", f"{key.with_suffix('.pub')}:/root/.ssh/authorized_keys:ro",
        *mounts,
        image_for(node.release),
    ]


def start_container(name: str) -> str:
    podman("start", name)
    return name


def remove_containers(names: Sequence[str]) -> None:
    if names:
        podman("rm", "--force", "--volumes", "--time", "0", *names)  # with the containerd volume


def wait_for_ssh(ip: str, timeout: float = SSH_TIMEOUT) -> None:
    """Until sshd sends its banner (host keys made, daemon listening)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((ip, 22), timeout=2) as sock:
            sock.settimeout(5)
            if sock.recv(64).startswith(b"SSH-"):
                return
        time.sleep(0.1)
    raise LabError(f"no SSH answer from {ip} within {timeout:.0f} s: check the node's journal "
                   "(podman exec NAME journalctl -b -u ssh)")


# ---------------------------------------------------------------------------- inventory


# Every lab cluster: nothing can be pulled, so KubeSphere's pods never try (whenever its components are installed:
# site.yml, playbooks/kubesphere.yml or slipway-operator on a cluster made without them), and a component the nodes
# lack the images of is refused with what gives them, not left to time out (docs/kubesphere.md).
LAB_PULL_VARS: dict[str, Any] = {"kubesphere_image_pull_policy": "Never"}
# With slipway_kubesphere_enabled: what the lab can run of KubeSphere. The bundle has the images of metrics-server,
# core, monitoring and alerting only (the others' pods stay ErrImageNeverPull: objects only, docs/kubesphere.md), so
# only those are waited for; and there is no storage provisioner, so Prometheus keeps its data in an emptyDir. --vars
# given for the same keys win.
LAB_KUBESPHERE_VARS: dict[str, Any] = {
    "kubesphere_wait": ["metrics_server", "monitoring", "alerting", "core"],
    "kubesphere_cluster_configuration": {"spec": {"monitoring": {"prometheus": {"volumeSize": ""}}}},
}


def render_inventory(cluster: Cluster, key: Path, extra_vars: dict[str, Any]) -> str:
    """A kubespray-compatible inventory: core groups always present, k8s_cluster as children."""
    nodes = sorted(cluster.nodes.values(), key=lambda n: ipaddress.ip_address(n.ip))
    hosts = {
        node.name: {
            "ansible_host": node.ip,
            "ip": node.ip,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(key),
            "ansible_ssh_common_args": SSH_COMMON_ARGS,
            "ansible_python_interpreter": "/usr/bin/python3",
        }
        for node in nodes
    }
    groups = list(CORE_GROUPS) + sorted({g for n in nodes for g in n.groups} - set(CORE_GROUPS))
    children: dict[str, Any] = {}
    for group in groups:
        members: dict[str, dict[str, Any]] = {n.name: {} for n in nodes if group in n.groups}
        children[group] = {"hosts": members} if members else {}
    children["k8s_cluster"] = {"children": {"kube_control_plane": {}, "kube_node": {}}}
    lab_vars = {
        "slipway_lab_cluster": cluster.name,
        "slipway_lab_subnet": cluster.subnet,
        "slipway_lab_vip": cluster.vip,
        "control_plane_kubelet_configuration": LAB_KUBELET_CONFIGURATION,
        **LAB_PULL_VARS,
    }
    if extra_vars.get("slipway_kubesphere_enabled") is True:
        lab_vars.update(LAB_KUBESPHERE_VARS)
    document = {"all": {"vars": {**lab_vars, **extra_vars}, "hosts": hosts, "children": children}}
    header = (f"{INVENTORY_HEADER} for lab cluster '{cluster.name}' ({cluster.subnet}); "
              "rewritten by every `up`.\n---\n")
    return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def remove_inventory(path_text: str) -> None:
    """Remove the inventory `up` wrote, never a file someone else wrote there."""
    path = Path(path_text) if path_text else None
    if path and path.is_file() and path.read_text(encoding="utf-8").startswith(INVENTORY_HEADER):
        path.unlink()


# ---------------------------------------------------------------------------- output


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def status_rows(clusters: list[Cluster], containers: list[Container]) -> list[list[str]]:
    by_name = {c.name: c for c in containers}
    rows = [["CLUSTER", "NODE", "STATE", "IP", "GROUPS", "DEBIAN", "CONTAINER"]]
    for cluster in clusters:
        for node in sorted(cluster.nodes.values(), key=lambda n: ipaddress.ip_address(n.ip)):
            name = container_name(cluster.name, node.name)
            state = by_name[name].state if name in by_name else "missing"
            rows.append([cluster.name, node.name, state, node.ip, ",".join(node.groups) or "-", node.release, name])
    known = {container_name(c.name, n) for c in clusters for n in c.nodes}
    for c in containers:
        if c.name not in known:
            rows.append([c.cluster, c.node, f"{c.state} (no state)", c.ip, "-", c.release, c.name])
    return rows


# ---------------------------------------------------------------------------- commands


def cmd_image(args: argparse.Namespace) -> int:
    for release in args.release or [DEFAULT_RELEASE]:
        built = ensure_image(lab_home(), force=args.force, release=release)
        print(f"{image_for(release)}: {'built' if built else 'up to date'}")
    return 0


def storage_free() -> tuple[str, int]:
    """Where podman keeps the nodes' files, and its free bytes."""
    where = podman_storage()
    return where, shutil.disk_usage(where).free


def converge_nodes(cluster: Cluster, key: Path, need_each: int = 0) -> list[str]:
    """Create missing nodes, start stopped ones, remove unlisted ones; say what was done. With need_each (bytes
    a new node takes), refuse before any change when podman's storage cannot hold the nodes to create."""
    containers = {c.name: c for c in list_containers(cluster.name)}
    wanted = {container_name(cluster.name, n.name): n for n in cluster.nodes.values()}
    stale = [name for name, c in containers.items()
             if name not in wanted or c.ip != wanted[name].ip or c.release != wanted[name].release]
    missing = [node for name, node in wanted.items() if name not in containers or name in stale]
    if need_each and missing:
        check_space(len(missing), need_each, *storage_free())
    remove_containers(stale)
    for name in stale:
        containers.pop(name)
    stopped = [name for name, c in containers.items() if c.state != "running"]
    parallel(lambda node: run_node(cluster, node, key), missing)
    parallel(start_container, stopped)
    done = [f"removed {name}" for name in stale]
    done += [f"created {node.name} ({node.ip})" for node in missing]
    done += [f"started {name}" for name in stopped]
    return done


def image_notes(containers: list[Container]) -> list[str]:
    current = {release: podman("image", "inspect", "--format", "{{.Id}}", image_for(release)).strip()
               for release in sorted({c.release for c in containers})}
    return [
        f"note: {c.name} runs an older node image; `down` then `up` to move it to the new one"
        for c in containers
        if c.image_id != current[c.release]
    ]


def cmd_up(args: argparse.Namespace) -> int:
    started = time.monotonic()
    home = lab_home()
    wanted = parse_nodes(args.node)
    volumes = tuple(parse_volume(spec) for spec in args.volume)
    extra_vars = parse_vars(args.vars)
    inventory = Path(args.inventory).resolve() if args.inventory else DEFAULT_INVENTORY
    built = False
    for release in sorted({node.release for node in wanted.values()}):
        built = ensure_image(home, release=release) or built
    key = ensure_key(home)
    for line in raise_kernel_limits() + keep_offline():
        print(line)
    old = load_state(home, args.cluster)
    cluster = plan_cluster(home, args.cluster, wanted, inventory, volumes)
    done = converge_nodes(cluster, key, node_disk_need(extra_vars.get("slipway_artifacts_bundle_dir")))
    parallel(wait_for_ssh, [node.ip for node in cluster.nodes.values()])
    if old and old.inventory and old.inventory != str(inventory):
        remove_inventory(old.inventory)
    wrote = write_if_changed(inventory, render_inventory(cluster, key, extra_vars))
    changed = built or bool(done) or wrote or old != cluster
    containers = list_containers(cluster.name)
    for line in done + image_notes(containers):
        print(line)
    if not changed:
        print(f"lab cluster '{cluster.name}': nothing changed ({len(cluster.nodes)} nodes up, "
              f"inventory {inventory})")
        return 0
    print(f"lab cluster '{cluster.name}' is up in {time.monotonic() - started:.1f} s "
          f"({cluster.subnet}, spare VIP {cluster.vip}); inventory: {inventory}")
    print_table(status_rows([cluster], containers))
    print(f"ssh -i {key} root@{next(iter(cluster.nodes.values())).ip}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    home = lab_home()
    with locked(home):
        cluster = load_state(home, args.cluster)
        names = [c.name for c in list_containers(args.cluster)]
        remove_containers(names)
        if cluster:
            remove_inventory(cluster.inventory)
            state_path(home, args.cluster).unlink()
    if not names and not cluster:
        print(f"lab cluster '{args.cluster}': nothing to remove")
    else:
        print(f"lab cluster '{args.cluster}': removed {len(names)} node(s)")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    home = lab_home()
    if args.cluster:
        cluster = load_state(home, args.cluster)
        clusters = [cluster] if cluster else []
    else:
        clusters = load_all_states(home)
    containers = list_containers(args.cluster)
    rows = status_rows(clusters, containers)
    if len(rows) == 1:
        print(f"no lab cluster{' ' + repr(args.cluster) if args.cluster else ''}")
        return 0
    print_table(rows)
    return 0


def cluster_name(text: str) -> str:
    if not NAME_RE.match(text):
        raise argparse.ArgumentTypeError(f"{text!r}: use lowercase letters, digits and '-'")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lab.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    image = sub.add_parser("image", help="build the node image if missing or stale")
    image.add_argument("--force", action="store_true", help="rebuild even if up to date")
    image.add_argument("--release", action="append", choices=RELEASES,
                       help=f"the Debian release's image (repeatable; default {DEFAULT_RELEASE})")
    image.set_defaults(func=cmd_image)
    up = sub.add_parser("up", help="create or start a cluster's nodes and write its inventory")
    up.add_argument("--cluster", required=True, type=cluster_name)
    up.add_argument("--node", action="append", default=[], metavar="NAME:GROUP[,GROUP...][:RELEASE]",
                    help=f"a node, its inventory groups and its Debian release ({' or '.join(RELEASES)}; "
                         f"default {DEFAULT_RELEASE}); repeat for each node")
    up.add_argument("--inventory", metavar="PATH", help=f"inventory to write (default {DEFAULT_INVENTORY})")
    up.add_argument("--vars", action="append", default=[], metavar="KEY=VALUE",
                    help="a variable for group all (value read as YAML; repeat)")
    up.add_argument("--volume", action="append", default=[], metavar="SRC:DST[:ro]",
                    help="a directory of this machine mounted into every node made by this `up` (repeat)")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="remove a cluster's nodes, state and inventory")
    down.add_argument("--cluster", required=True, type=cluster_name)
    down.set_defaults(func=cmd_down)
    status = sub.add_parser("status", help="list lab nodes")
    status.add_argument("--cluster", type=cluster_name)
    status.set_defaults(func=cmd_status)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        check_host()
        return int(args.func(args))
    except LabError as error:
        print(f"lab.py {args.command}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into head or a closed pager
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
