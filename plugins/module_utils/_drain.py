# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""What draining a node does with each of its pods, in pure Python (no Kubernetes import).

The rules are ``kubectl drain``'s:

- mirror pods (the API server's copies of a kubelet's static pods) are left alone: deleting one
  does nothing, the kubelet recreates it;
- pods that already terminated (phase Succeeded or Failed) are deleted, whoever owns them;
- pods of a DaemonSet are left alone: the DaemonSet controller ignores the cordon and would
  start them again at once;
- pods with emptyDir volumes are refused unless their data may go (``delete_emptydir_data``);
- pods without a controller are refused unless ``force``: nothing would recreate them;
- every other pod is evicted (policy/v1 Eviction), which the API server refuses with 429 while a
  PodDisruptionBudget that selects the pod allows no disruption.

This module also says which PodDisruptionBudgets select a pod (label selector rules) and writes
the messages the module fails with.
"""

from __future__ import annotations

from typing import Any

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
TERMINATED_PHASES = ("Succeeded", "Failed")

SKIP_MIRROR = "mirror"
SKIP_DAEMONSET = "daemonset"

REFUSE_UNMANAGED = "unmanaged"
REFUSE_EMPTYDIR = "emptydir"

BLOCK_REFUSED = "eviction refused"
BLOCK_TERMINATING = "still terminating"


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def pod_namespace(obj: dict) -> str:
    return _dict(obj.get("metadata")).get("namespace") or "default"


def pod_name(obj: dict) -> str:
    return _dict(obj.get("metadata")).get("name") or ""


def pod_key(obj: dict) -> str:
    """``namespace/name``, how pods and PodDisruptionBudgets are named in results and messages."""
    return "%s/%s" % (pod_namespace(obj), pod_name(obj))


def pod_uid(pod: dict) -> "str | None":
    return _dict(pod.get("metadata")).get("uid")


def pod_ref(pod: dict) -> "dict[str, str]":
    return {"namespace": pod_namespace(pod), "name": pod_name(pod)}


def controller_of(pod: dict) -> "dict | None":
    """The owner reference marked ``controller: true``, or None."""
    for owner in _list(_dict(pod.get("metadata")).get("ownerReferences")):
        if isinstance(owner, dict) and owner.get("controller") is True:
            return owner
    return None


def is_mirror(pod: dict) -> bool:
    return MIRROR_ANNOTATION in _dict(_dict(pod.get("metadata")).get("annotations"))


def is_terminated(pod: dict) -> bool:
    return _dict(pod.get("status")).get("phase") in TERMINATED_PHASES


def is_daemonset_pod(pod: dict) -> bool:
    owner = controller_of(pod)
    return owner is not None and owner.get("kind") == "DaemonSet"


def has_emptydir(pod: dict) -> bool:
    return any(isinstance(volume, dict) and "emptyDir" in volume
               for volume in _list(_dict(pod.get("spec")).get("volumes")))


class DrainPlan:
    """What a drain does with each pod of the node.

    ``skipped`` and ``refused`` are lists of ``{namespace, name, reason}``; ``delete`` (already
    terminated) and ``evict`` are lists of the pods themselves; ``unmanaged`` names the pods without
    a controller that ``force`` lets through to eviction.
    """

    def __init__(self) -> None:
        self.skipped: "list[dict[str, str]]" = []
        self.refused: "list[dict[str, str]]" = []
        self.delete: "list[dict]" = []
        self.evict: "list[dict]" = []
        self.unmanaged: "list[str]" = []


def plan_drain(pods: "list[dict]", force: bool = False, delete_emptydir_data: bool = True) -> DrainPlan:
    """Sort the node's pods into skipped, refused, to delete and to evict, in the order given."""
    plan = DrainPlan()
    for pod in pods:
        if is_mirror(pod):
            plan.skipped.append(dict(pod_ref(pod), reason=SKIP_MIRROR))
        elif is_terminated(pod):
            plan.delete.append(pod)
        elif is_daemonset_pod(pod):
            plan.skipped.append(dict(pod_ref(pod), reason=SKIP_DAEMONSET))
        else:
            reasons = []
            if has_emptydir(pod) and not delete_emptydir_data:
                reasons.append(REFUSE_EMPTYDIR)
            if controller_of(pod) is None:
                if force:
                    plan.unmanaged.append(pod_key(pod))
                else:
                    reasons.append(REFUSE_UNMANAGED)
            if reasons:
                plan.refused.extend(dict(pod_ref(pod), reason=reason) for reason in reasons)
            else:
                plan.evict.append(pod)
    return plan


def _requirement_matches(requirement: Any, labels: "dict[str, str]") -> bool:
    if not isinstance(requirement, dict):
        return False
    key = requirement.get("key")
    operator = requirement.get("operator")
    values = _list(requirement.get("values"))
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an operator the API server would not have accepted


def selector_matches(selector: Any, labels: "dict[str, str] | None") -> bool:
    """Whether a metav1 LabelSelector selects these labels.

    Every matchLabels pair and every matchExpressions requirement must hold; an empty selector
    (``{}``) selects everything, a missing one (None) nothing, as for policy/v1 PodDisruptionBudgets.
    """
    if not isinstance(selector, dict):
        return False
    labels = labels or {}
    for key, value in _dict(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    return all(_requirement_matches(requirement, labels) for requirement in _list(selector.get("matchExpressions")))


def pdb_selects(pdb: dict, pod: dict) -> bool:
    """Whether the PodDisruptionBudget covers the pod: same namespace and its selector selects the pod's labels."""
    metadata = _dict(pdb.get("metadata"))
    if (metadata.get("namespace") or "default") != pod_namespace(pod):
        return False
    return selector_matches(_dict(pdb.get("spec")).get("selector"), _dict(pod.get("metadata")).get("labels"))


def pdbs_selecting(pdbs: "list[dict]", pod: dict) -> "list[str]":
    """``namespace/name`` of every PodDisruptionBudget that selects the pod, sorted."""
    return sorted(pod_key(pdb) for pdb in pdbs if pdb_selects(pdb, pod))


def blocking_entry(pod: dict, reason: str, pdbs: "list[dict]", message: str = "") -> "dict[str, Any]":
    """One pod that still blocks the drain: ``{namespace, name, reason, pdbs, message}``."""
    return dict(pod_ref(pod), reason=reason, pdbs=pdbs_selecting(pdbs, pod) if reason == BLOCK_REFUSED else [],
                message=message)


def describe_blocking(entry: "dict[str, Any]") -> str:
    """``ns/pod (PodDisruptionBudget ns/pdb)``, ``ns/pod (eviction refused: <API message>)`` or
    ``ns/pod (evicted, still terminating)``."""
    key = "%s/%s" % (entry["namespace"], entry["name"])
    if entry.get("reason") == BLOCK_TERMINATING:
        return "%s (evicted, still terminating)" % key
    pdbs = entry.get("pdbs") or []
    if pdbs:
        return "%s (PodDisruptionBudget%s %s)" % (key, "s" if len(pdbs) > 1 else "", ", ".join(pdbs))
    message = (entry.get("message") or "").strip()
    return "%s (eviction refused%s)" % (key, ": " + message if message else "")


def timeout_message(node: str, timeout: int, blocking: "list[dict[str, Any]]") -> str:
    """What the module fails with when pods still block after ``timeout`` seconds."""
    return ("node %s not drained within %d s: %d pod%s still blocking: %s. The node stays cordoned. Raise timeout, or set "
            "force: true to delete these pods without their PodDisruptionBudgets' consent"
            % (node, timeout, len(blocking), "" if len(blocking) == 1 else "s",
               ", ".join(describe_blocking(entry) for entry in blocking)))


_REFUSAL_TEXT = {
    REFUSE_UNMANAGED: "has no controller to recreate it (set force: true to delete it anyway)",
    REFUSE_EMPTYDIR: "has emptyDir volumes (set delete_emptydir_data: true to delete their data)",
}


def refusal_message(node: str, refused: "list[dict[str, str]]") -> str:
    """What the module fails with when pods may not be evicted; nothing was evicted then."""
    return ("cannot drain node %s, nothing was evicted: %s"
            % (node, "; ".join("%s/%s %s" % (entry["namespace"], entry["name"], _REFUSAL_TEXT.get(entry["reason"], entry["reason"]))
                               for entry in refused)))
