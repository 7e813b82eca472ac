# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Recovery: which control plane brings back a cluster that lost the majority of its control planes, and from
what (a surviving etcd member's data or a snapshot; playbooks/recover_control_plane.yml).

Pure Python: the playbook reads the running cluster and hands it here; every refusal is a unit test.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def recover_plan(
    model: Mapping[str, Any],
    answering: Sequence[str],
    members: Mapping[str, Mapping[str, Any]],
    snapshot: str = "",
) -> dict[str, Any]:
    """Which control plane brings the cluster back, and how.

    ``answering``: the inventory's control planes that answered; ``members``: control plane -> what it holds
    of stacked etcd or, with external etcd, etcd member -> the same (``data``: its data directory holds a
    member, ``ca``: it holds the cluster CA, for control planes). ``snapshot``: a snapshot to restore
    instead of a surviving member's data. Returns ``host`` (the control plane brought back), ``etcd_host``
    (where etcd starts anew), ``source`` (``member`` or ``snapshot``) and ``problems``.
    """
    problems: list[str] = []
    control_planes = list(model["control_planes"])
    stacked = model.get("etcd_mode", "stacked") == "stacked"
    alive = [host for host in control_planes if host in answering and (members.get(host) or {}).get("ca")]
    plan: dict[str, Any] = {"host": "", "etcd_host": "", "source": "snapshot" if snapshot else "member", "problems": problems}
    if not alive:
        problems.append("no control plane of the inventory (" + ", ".join(control_planes) + ") answers with the cluster's"
                        " certificates (/etc/kubernetes/pki/ca.crt): recovery brings the API back on a surviving control"
                        " plane; list one first in kube_control_plane")
        return plan
    plan["host"] = alive[0]
    etcd_hosts = [alive[0]] if stacked else [host for host in model.get("etcd_members", []) if host in answering]
    if not snapshot:
        with_data = [host for host in etcd_hosts if (members.get(host) or {}).get("data")]
        if not with_data:
            problems.append("no surviving etcd member holds data (" + (", ".join(etcd_hosts) or "none answers") + "):"
                            " recover from a snapshot with -e etcd_snapshot=FILE")
        else:
            plan["etcd_host"] = with_data[0]
    elif etcd_hosts:
        plan["etcd_host"] = etcd_hosts[0]
    else:
        problems.append("no etcd member answers to restore the snapshot on")
    return plan
