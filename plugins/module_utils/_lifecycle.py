# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The running cluster against the inventory: what scale.yml adds and what remove_node.yml may remove.

Pure Python: the day-2 playbooks read the Node objects (from the API server) and etcd's member
list and health (etcdctl on a member) and hand them here; every decision and every refusal is a
unit test.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ansible_collections.slipway.cluster.plugins.module_utils._problems import Problem


def _ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def _member_name_for(member: Mapping[str, Any], addresses: Mapping[str, str]) -> str:
    """etcd names a member after its host; a member added but not started yet has no name: its peer URL tells."""
    if member.get("name"):
        return str(member["name"])
    for url in member.get("peerURLs") or []:
        host = str(url).split("//", 1)[-1].rsplit(":", 1)[0].strip("[]")
        for name, address in addresses.items():
            if address == host:
                return name
    return ""


def running_cluster(
    nodes: Sequence[Mapping[str, Any]],
    members: Mapping[str, Any] | None = None,
    health: Sequence[Mapping[str, Any]] | None = None,
    addresses: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Normalize what the API server and etcd report.

    ``nodes``: Node objects (``kubectl get nodes -o json``'s items, or k8s_info's resources);
    ``members``: ``etcdctl member list -w json``; ``health``: ``etcdctl endpoint health --cluster -w json``
    (None when etcd was not read); ``addresses``: inventory name -> address, to name unstarted members.
    """
    result: dict[str, Any] = {"nodes": {}, "etcd": None}
    for node in nodes:
        meta = node.get("metadata") or {}
        name = str(meta.get("name", ""))
        labels = meta.get("labels") or {}
        result["nodes"][name] = {
            "name": name,
            "ready": _ready(node),
            "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
            "version": str(((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")),
            # What the kubelet reports of its container runtime: containerd://1.6.20, containerd://2.3.7
            "runtime": str(((node.get("status") or {}).get("nodeInfo") or {}).get("containerRuntimeVersion", "")),
            "control_plane": "node-role.kubernetes.io/control-plane" in labels,
            # The addresses the kubelet registered (--node-ip): a machine replaced under the name has others.
            "addresses": [str(entry.get("address")) for entry in (node.get("status") or {}).get("addresses") or []
                          if entry.get("type") == "InternalIP" and entry.get("address")],
        }
    if members is not None:
        healthy_urls = {str(entry.get("endpoint", "")) for entry in health or [] if entry.get("health")}
        listed = []
        for member in members.get("members") or []:
            client_urls = [str(url) for url in member.get("clientURLs") or []]
            listed.append({
                "id": int(member.get("ID", 0)),
                "id_hex": "%x" % int(member.get("ID", 0)),
                "name": _member_name_for(member, addresses or {}),
                "started": bool(member.get("name")),
                "peer_urls": [str(url) for url in member.get("peerURLs") or []],
                "client_urls": client_urls,
                "healthy": bool(client_urls) and any(url in healthy_urls for url in client_urls),
            })
        result["etcd"] = {"members": listed}
    return result


def scale_plan(model: Mapping[str, Any], running: Mapping[str, Any]) -> dict[str, Any]:
    """The inventory hosts the running cluster does not have yet."""
    nodes = model["nodes"]
    in_cluster = set(running.get("nodes") or {})
    new_kubernetes = [name for name, node in nodes.items() if node.get("kubernetes") and name not in in_cluster]
    etcd = running.get("etcd")
    new_etcd: list[str] = []
    if model.get("etcd_mode") == "external" and etcd is not None:
        known = {member["name"] for member in etcd["members"] if member.get("started")}
        new_etcd = [name for name in model["etcd_members"] if name not in known]
    new_hosts = list(dict.fromkeys(new_kubernetes + new_etcd))
    return {
        "new_hosts": new_hosts,
        "new_control_planes": [name for name in new_kubernetes if "control_plane" in nodes[name]["roles"]],
        "new_workers": [name for name in new_kubernetes if "control_plane" not in nodes[name]["roles"]],
        "new_etcd_members": new_etcd,
        # Every node talks to these: their /etc/hosts entries and haproxy backends change everywhere.
        "shared_hosts_change": any(
            set(nodes[name]["roles"]) - {"worker"} for name in new_hosts
        ),
    }


def removal_plan(
    model: Mapping[str, Any],
    running: Mapping[str, Any],
    names: Sequence[str],
    force: bool = False,
    unreachable: Sequence[str] = (),
) -> dict[str, Any]:
    """Decide a removal before any change: problems stop it, warnings are shown and it goes on.

    ``model``: the cluster model with the hosts to remove still in it; ``running``: running_cluster();
    ``names``: the hosts to remove; ``unreachable``: hosts that did not answer just now.
    """
    problems: list[Problem] = []
    warnings: list[Problem] = []
    nodes_in_model = model["nodes"]
    running_nodes = running.get("nodes") or {}
    wanted = list(dict.fromkeys(str(name).strip() for name in names if str(name).strip()))
    if not wanted:
        problems.append(Problem("remove_node_names", "is empty; set it to the node(s) to remove, e.g. -e remove_node_names=w3"))

    removable, already_gone = [], []
    for name in wanted:
        if name in running_nodes:
            removable.append(name)
        elif name in nodes_in_model:
            # A rerun after a removal that went through (or stopped after deleting the Node): only
            # the node-side clean-up and the member removal are left, each idempotent.
            already_gone.append(name)
        else:
            known = ", ".join(sorted(running_nodes)) or "none"
            problems.append(Problem(
                "remove_node_names",
                f"'{name}' is neither a node of the cluster nor a host of the inventory (nodes: {known}); check the name",
            ))

    control_planes_now = [name for name, node in running_nodes.items() if node.get("control_plane")]
    control_planes_now = control_planes_now or [n for n in model["control_planes"] if n in running_nodes]
    leaving_cps = [name for name in wanted if name in control_planes_now or name in model["control_planes"]]
    remaining_cps = [name for name in control_planes_now if name not in wanted]
    if leaving_cps and not remaining_cps:
        problems.append(Problem(
            "remove_node_names",
            f"would remove the last control plane ({', '.join(leaving_cps)}); a cluster needs one: add a control plane "
            "with playbooks/scale.yml first, or tear the cluster down with playbooks/reset.yml",
        ))

    etcd = running.get("etcd")
    leaving_members: list[dict[str, Any]] = []
    if etcd is not None:
        members = etcd["members"]
        leaving_members = [member for member in members if member["name"] in wanted]
        staying = [member for member in members if member["name"] not in wanted]
        healthy_staying = [member for member in staying if member["healthy"]]
        if leaving_members and staying:
            quorum = len(staying) // 2 + 1
            if len(healthy_staying) < quorum:
                problems.append(Problem(
                    "remove_node_names",
                    f"would leave etcd with {len(staying)} member(s) of which {len(healthy_staying)} are healthy "
                    f"({', '.join(m['name'] or m['id_hex'] for m in healthy_staying) or 'none'}); {quorum} are needed "
                    "for quorum: bring the unhealthy members back first (or recover the control plane)",
                ))
            elif len(staying) % 2 == 0:
                warnings.append(Problem(
                    "remove_node_names",
                    f"leaves etcd with {len(staying)} members, an even number that tolerates no more failures than "
                    f"{len(staying) - 1}: add a member back with playbooks/scale.yml",
                ))
        elif leaving_members and not staying:
            problems.append(Problem("remove_node_names", "would remove every etcd member; use playbooks/reset.yml to tear the cluster down"))

    not_ready = sorted(
        name for name, node in running_nodes.items() if not node["ready"] and name not in wanted
    )
    if not_ready and not force:
        problems.append(Problem(
            "remove_node_names",
            f"node(s) {', '.join(not_ready)} not Ready: removing another node now could leave too little running; "
            "bring them back first, or set remove_node_force: true",
        ))
    for name in wanted:
        if name in unreachable:
            warnings.append(Problem(
                f"host {name}",
                "does not answer: it is removed from the cluster's side only (drain, etcd member, Node object); "
                "reset the machine yourself if it comes back",
            ))

    return {
        "problems": [str(p) for p in problems],
        "warnings": [str(w) for w in warnings],
        "names": wanted,
        "nodes_to_delete": removable,
        "already_removed": already_gone,
        "control_planes": leaving_cps,
        "etcd_members": [{"name": m["name"], "id_hex": m["id_hex"]} for m in leaving_members],
    }
