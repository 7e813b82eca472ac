# Private to the slipway.cluster collection: no compatibility promise outside it.
"""What playbooks/upgrade.yml may do, and what site.yml refuses: versions of the running cluster against the target.

Pure Python: the playbooks read the Node objects, the control planes' static pod manifests, kubeadm's
ClusterConfiguration, etcd's health, the certificates' expiry and ``kubeadm upgrade plan`` and hand them here;
every decision and every refusal is a unit test.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Mapping, Sequence

# The control plane's static pods whose image tags say which version a control plane runs.
CONTROL_PLANE_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


def parse_version(text: Any) -> tuple[int, int, int] | None:
    """(major, minor, patch) of ``1.37.1`` or ``v1.37.1``; None for anything else (pre-releases too)."""
    match = _VERSION.match(str(text or "").strip())
    return tuple(int(part) for part in match.groups()) if match else None  # type: ignore[return-value]


def _text(version: tuple[int, int, int]) -> str:
    return "%d.%d.%d" % version


def image_version(image: Any) -> str:
    """The version of an image reference's tag: registry.k8s.io/kube-apiserver:v1.36.5 -> 1.36.5 ('' when none)."""
    tag = str(image or "").rsplit("/", 1)[-1].partition(":")[2].split("@", 1)[0]
    parsed = parse_version(tag)
    return _text(parsed) if parsed else ""


def static_pod_versions(manifests: Mapping[str, Any]) -> dict[str, str]:
    """{component: version} from the parsed static pod manifests of one control plane ({component: Pod})."""
    versions = {}
    for component, pod in (manifests or {}).items():
        containers = ((pod or {}).get("spec") or {}).get("containers") or []
        versions[component] = image_version(containers[0].get("image")) if containers else ""
    return versions


def _node_parts(name: str, node: Mapping[str, Any], control_plane: bool,
                static_pods: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Every version a node runs: its kubelet and, on a control plane, each static pod's."""
    parts = {"kubelet": _text(parse_version(node.get("version")) or (0, 0, 0))}
    if control_plane:
        pods = static_pods.get(name) or {}
        for component in CONTROL_PLANE_COMPONENTS:
            parts[component] = pods.get(component) or "0.0.0"
    return parts


def node_versions(running: Mapping[str, Any], control_planes: Sequence[str],
                  static_pods: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, dict[str, Any]]:
    """Per node: the versions of its parts and the lowest of them (where its upgrade stands)."""
    result = {}
    for name, node in sorted((running.get("nodes") or {}).items()):
        parts = _node_parts(name, node, name in control_planes or bool(node.get("control_plane")), static_pods or {})
        lowest = min(parse_version(version) or (0, 0, 0) for version in parts.values())
        result[name] = {"parts": parts, "version": _text(lowest)}
    return result


def _cert_problems(certificates: Mapping[str, Any], now: float, min_hours: float) -> list[str]:
    problems = []
    limit = now + min_hours * 3600
    for host, report in sorted((certificates or {}).items()):
        entries = list((report or {}).get("certificates") or []) + list((report or {}).get("certificateAuthorities") or [])
        for entry in entries:
            if entry.get("externallyManaged") or entry.get("missing"):
                continue
            expires = str(entry.get("expirationDate") or "")
            try:
                when = datetime.datetime.fromisoformat(expires.replace("Z", "+00:00")).timestamp()
            except ValueError:
                problems.append(f"host {host}: certificate {entry.get('name')} has no readable expiry date ({expires!r})")
                continue
            if when < limit:
                problems.append(
                    f"host {host}: certificate {entry.get('name')} expires {expires}, within the {min_hours:g} hours an "
                    "upgrade may take (upgrade_min_certificate_hours); renew the certificates first "
                    "(kubeadm certs renew all on each control plane)")
    return problems


def _worker_batch(value: Any) -> int | None:
    """upgrade_worker_batch as a whole number of 1 or more (text from -e or INI counts), else None."""
    if isinstance(value, bool):
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return number if number >= 1 else None


def upgrade_plan(
    model: Mapping[str, Any],
    running: Mapping[str, Any],
    static_pods: Mapping[str, Mapping[str, str]] | None = None,
    cluster_version: str = "",
    certificates: Mapping[str, Any] | None = None,
    now: float = 0.0,
    min_certificate_hours: float = 24.0,
    kubeadm_plan: Mapping[str, Any] | None = None,
    worker_batch: Any = 1,
    containerd: str = "",
) -> dict[str, Any]:
    """Decide the upgrade of the running cluster to the model's Kubernetes version.

    ``static_pods``: control plane -> {component: version} (static_pod_versions); ``cluster_version``: the
    kubernetesVersion of kubeadm's ClusterConfiguration (kube-system/kubeadm-config); ``certificates``: control plane
    -> ``kubeadm certs check-expiration -o json``; ``now``: seconds since the epoch; ``kubeadm_plan``: rc, stdout and
    stderr of ``kubeadm upgrade plan`` (None when not run); ``worker_batch``: upgrade_worker_batch, how many workers are
    upgraded together (a number given as text counts); ``containerd``: the release the artifacts install (2.3.7): a node
    at the target whose containerd is older is drained and moved to it like a node to upgrade (``runtime``). Every
    problem is listed; nothing is decided away.
    """
    target = parse_version(model.get("kubernetes_version"))
    now, min_certificate_hours = float(now), float(min_certificate_hours)
    problems: list[str] = []
    if target is None:
        return {"problems": [f"slipway_kubernetes_version: {model.get('kubernetes_version')!r} is not a version like 1.37.1"]}
    target_text = _text(target)
    control_planes = list(model.get("control_planes") or [])
    inventory = [name for name, node in (model.get("nodes") or {}).items() if node.get("kubernetes")]
    nodes = running.get("nodes") or {}
    versions = node_versions(running, control_planes, static_pods)

    missing = [name for name in inventory if name not in nodes]
    if missing:
        problems.append(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} in the inventory but not in the "
                        "cluster: add them with playbooks/scale.yml first, or take them out of the inventory")
    extra = [name for name in nodes if name not in inventory]
    if extra:
        problems.append(f"the cluster has {', '.join(sorted(extra))}, which the inventory lacks: an upgrade would leave "
                        f"{'it' if len(extra) == 1 else 'them'} behind; add {'it' if len(extra) == 1 else 'them'} to the "
                        "inventory, or remove them with playbooks/remove_node.yml")

    newer = {name: info["parts"] for name, info in versions.items()
             if any((parse_version(v) or (0, 0, 0)) > target for v in info["parts"].values())}
    for name, parts in sorted(newer.items()):
        runs = ", ".join(f"{part} {version}" for part, version in parts.items() if (parse_version(version) or (0, 0, 0)) > target)
        problems.append(f"node {name} runs {runs}, newer than the target {target_text}: upgrade.yml does not downgrade "
                        "(to go back, restore the etcd snapshot taken before the upgrade: docs/operations.md)")
    behind = {name: info for name, info in versions.items() if (parse_version(info["version"]) or (0, 0, 0)) < target}
    starts = sorted({info["version"] for info in behind.values()}, key=lambda v: parse_version(v) or (0, 0, 0))
    start = starts[0] if starts else ""
    if len(starts) > 1:
        listed = "; ".join(f"{version} on {', '.join(n for n, i in sorted(behind.items()) if i['version'] == version)}"
                           for version in starts)
        problems.append(f"the nodes start from different versions ({listed}): every node must be at one version "
                        f"before an upgrade to {target_text}")
    for version in starts:
        parsed = parse_version(version) or (0, 0, 0)
        if parsed[0] != target[0] or target[1] - parsed[1] > 1:
            on = ", ".join(n for n, i in sorted(behind.items()) if i["version"] == version)
            problems.append(f"{on} run{'s' if ',' not in on else ''} {version}: one minor version at a time, so "
                            f"upgrade to the newest {parsed[0]}.{parsed[1] + 1} release first, then to {target_text}")

    not_ready = sorted(name for name, node in nodes.items() if not node.get("ready"))
    if not_ready:
        problems.append(f"{', '.join(not_ready)} {'is' if len(not_ready) == 1 else 'are'} not Ready: an upgrade drains "
                        "one node after another and needs every node Ready; repair it or remove it first")
    etcd = running.get("etcd")
    if etcd is not None:
        sick = [member.get("name") or member.get("id_hex") for member in etcd.get("members") or [] if not member.get("healthy")]
        if sick:
            problems.append(f"etcd member{'s' if len(sick) > 1 else ''} {', '.join(sick)} "
                            f"{'are' if len(sick) > 1 else 'is'} not healthy: an upgrade restarts etcd member after "
                            "member and needs every member healthy")
        if not etcd.get("members"):
            problems.append("etcd lists no member")
    problems.extend(_cert_problems(certificates or {}, now, min_certificate_hours))
    batch = _worker_batch(worker_batch)
    if batch is None:
        problems.append(f"upgrade_worker_batch: {worker_batch!r} is not a number of workers; set a whole number of 1 or "
                        "more (workers drained and upgraded together)")

    # Nodes whose containerd is older than the target supports or than the artifacts' release: drained, moved, uncordoned.
    runtime = old_runtimes(target, running, containerd)
    todo = [name for name in nodes if name in behind or name in runtime]
    todo_control_planes = [name for name in control_planes if name in todo]
    todo_workers = [name for name in inventory if name in todo and name not in control_planes]
    # kubeadm upgrade apply changes the cluster's configuration once, on the first control plane still to do;
    # when the ClusterConfiguration says the target already, the rest run kubeadm upgrade node.
    cluster_parsed = parse_version(cluster_version)
    apply_on = todo_control_planes[0] if todo_control_planes and cluster_parsed != target else ""
    if cluster_parsed and cluster_parsed > target:
        problems.append(f"kubeadm's ClusterConfiguration says kubernetesVersion v{_text(cluster_parsed)}, newer than "
                        f"the target {target_text}: upgrade.yml does not downgrade")
    if todo and kubeadm_plan is not None and kubeadm_plan.get("rc") not in (0, None):
        lines = [line for line in str(kubeadm_plan.get("stderr") or kubeadm_plan.get("stdout") or "").splitlines() if line.strip()]
        problems.append(f"kubeadm upgrade plan {target_text} refuses: {' / '.join(lines[-3:]) or 'exit ' + str(kubeadm_plan.get('rc'))}")

    # A node at the target that is still cordoned: an upgrade interrupted between its Ready wait and its uncordon.
    uncordon = [name for name in inventory if name in nodes and name not in todo and name not in newer
                and nodes[name].get("unschedulable")]
    return {
        "target": target_text,
        "start": start,
        "uncordon": uncordon,
        "problems": problems,
        "todo": todo,
        "runtime": runtime,
        "todo_control_planes": todo_control_planes,
        "todo_workers": todo_workers,
        "apply_on": apply_on,
        "worker_batch": batch or 1,
        "versions": {name: info["version"] for name, info in versions.items()},
        "parts": {name: info["parts"] for name, info in versions.items()},
    }


def plan_verdict(stdout: str) -> str:
    """The lines of ``kubeadm upgrade plan``'s output that say what it would do (its table and its verdict)."""
    keep = []
    for line in str(stdout or "").splitlines():
        text = line.rstrip()
        if not text.strip() or set(text.strip()) <= {"_", "-", "="}:
            continue
        if text.lstrip().startswith(("[upgrade", "[preflight")):
            continue
        keep.append(text)
    return "\n".join(keep)


# containerd's oldest release line each Kubernetes minor supports (containerd's RELEASES.md): Kubernetes 1.35 was the
# last release to support containerd 1.x.
CONTAINERD_MINIMUM: dict[tuple[int, int], tuple[int, int, int]] = {(1, 36): (2, 0, 0), (1, 37): (2, 0, 0)}
MOVE_COMMAND = "ansible-playbook playbooks/upgrade.yml -i INVENTORY"


def containerd_version(runtime: Any) -> tuple[int, int, int] | None:
    """containerd://1.6.20 (the kubelet's containerRuntimeVersion) -> (1, 6, 20); None for another runtime or none."""
    text = str(runtime or "")
    if not text.startswith("containerd://"):
        return None
    return parse_version(text.split("://", 1)[1].split("~", 1)[0].split("-", 1)[0].split("+", 1)[0])


def old_runtimes(target: tuple[int, int, int], running: Mapping[str, Any], wanted: str = "") -> dict[str, str]:
    """Nodes whose containerd is older than the target Kubernetes supports, or than ``wanted`` (the release the
    artifacts install, e.g. 2.3.7): {node: its containerd version}."""
    minimum = CONTAINERD_MINIMUM.get(target[:2], (2, 0, 0) if target[:2] > (1, 35) else (0, 0, 0))
    floor = max(minimum, parse_version(wanted) or (0, 0, 0))
    old = {}
    for name, node in sorted((running.get("nodes") or {}).items()):
        parsed = containerd_version(node.get("runtime"))
        if parsed is not None and parsed < floor:
            old[name] = _text(parsed)
    return old


def runtime_problems(target_version: str, running: Mapping[str, Any]) -> list[str]:
    """The nodes whose containerd the target Kubernetes does not support, with the playbook that moves them to the
    artifacts' containerd 2, drained one after another (site.yml would restart containerd everywhere at once)."""
    target = parse_version(target_version)
    if target is None:
        return []
    minimum = CONTAINERD_MINIMUM.get(target[:2], (2, 0, 0) if target[:2] > (1, 35) else (0, 0, 0))
    old = old_runtimes(target, running)
    if not old:
        return []
    runs = ", ".join(f"{name} ({version})" for name, version in old.items())
    return [f"Kubernetes {target[0]}.{target[1]} needs containerd {_text(minimum)} or newer, and the containerd of {runs} "
            f"is older: site.yml does not change the runtime of a running node; move "
            f"{'it' if len(old) == 1 else 'them'} to the artifacts' containerd, drained one at a time: "
            f"{MOVE_COMMAND} -e slipway_kubernetes_version={_text(target)}"]


def site_version_problems(target_version: str, running: Mapping[str, Any]) -> list[str]:
    """site.yml's refusal: it builds and converges a cluster at slipway_kubernetes_version, never changes its version."""
    target = parse_version(target_version)
    if target is None:
        return []
    by_version: dict[tuple[int, int, int], list[str]] = {}
    for name, node in sorted((running.get("nodes") or {}).items()):
        parsed = parse_version(node.get("version"))
        if parsed is not None and parsed != target:
            by_version.setdefault(parsed, []).append(name)
    problems = []
    older = {v: names for v, names in by_version.items() if v < target}
    newer = {v: names for v, names in by_version.items() if v > target}
    if older:
        runs = "; ".join(f"{', '.join(names)} at {_text(v)}" for v, names in sorted(older.items()))
        problems.append(f"slipway_kubernetes_version is {_text(target)} but the cluster runs older nodes ({runs}): "
                        "site.yml does not upgrade a running cluster; run "
                        f"ansible-playbook playbooks/upgrade.yml -i INVENTORY -e slipway_kubernetes_version={_text(target)}")
    if newer:
        runs = "; ".join(f"{', '.join(names)} at {_text(v)}" for v, names in sorted(newer.items()))
        problems.append(f"slipway_kubernetes_version is {_text(target)} but the cluster runs newer nodes ({runs}): "
                        "site.yml does not downgrade; set slipway_kubernetes_version to the cluster's version")
    return problems + runtime_problems(target_version, running)


def upgrade_summary(plan: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """One line per node: its version before the upgrade (the plan's, lowest of its parts) and after (its kubelet's)."""
    lines = [f"Kubernetes {plan.get('start') or plan.get('target')} -> {plan.get('target')}"
             + ("" if plan.get("todo") else " (nothing was left to upgrade)")]
    before = plan.get("versions") or {}
    for name, node in sorted((after.get("nodes") or {}).items()):
        now = _text(parse_version(node.get("version")) or (0, 0, 0))
        ready = "Ready" if node.get("ready") else "NotReady"
        lines.append(f"{name}: {before.get(name, '?')} -> {now}, {ready}")
    return lines
