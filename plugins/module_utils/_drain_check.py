# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Whether the drains a playbook is about to do can finish, decided before any node is touched (pure Python).

Given the cluster's Nodes, Pods and PodDisruptionBudgets and the order of the drains (one node, or a batch of nodes
drained together, at a time), ``drain_blockers`` plays the drains through and names every budget that would refuse an
eviction for good, with the node, the pods, why and what to change:

- the pods a drain evicts are those of ``_drain.plan_drain`` (mirror and DaemonSet pods stay, terminated ones are
  deleted without eviction);
- the API server lets an eviction through while the budget's ``disruptionsAllowed`` (healthy pods minus the pods it
  wants healthy) is above 0, computed as the disruption controller does (pkg/controller/disruption): ``minAvailable``
  as a number against every pod the budget selects, ``minAvailable`` in percent and ``maxUnavailable`` against the
  controllers' scale, both percentages rounded up; an unready pod may go while the budget is not disrupted (or
  always, with ``unhealthyPodEvictionPolicy: AlwaysAllow``), a Pending one always; a pod two budgets select never
  (pkg/registry/core/pod/storage/eviction.go);
- an evicted pod's replacement runs again only on a node that is not cordoned, not being drained, not removed, whose
  taints (NoSchedule, NoExecute) it tolerates and whose labels match its nodeSelector and required node affinity.
  While it cannot run, the budget has one healthy pod fewer. A node drained earlier is back and schedulable after its
  turn when ``after`` is ``uncordoned`` (upgrade.yml), and gone when ``removed`` (remove_node.yml).

Not modelled: CPU and memory requests against allocatable, pod (anti-)affinity and topology spread constraints; a
replacement is placed where the rules above allow it.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from ansible_collections.slipway.cluster.plugins.module_utils import _drain as drain
# _drain's private helpers too: the same tolerance of missing or malformed fields.
from ansible_collections.slipway.cluster.plugins.module_utils._drain import _dict, _list, _requirement_matches

AFTER_CHOICES = ("uncordoned", "removed")
IGNORE_ALL = ("all", "true", "yes")

CAUSE_BUDGET = "budget allows no eviction"
CAUSE_UNHEALTHY = "unhealthy pods"
CAUSE_PLACEMENT = "nowhere to run"
CAUSE_SEVERAL = "several budgets"
CAUSE_INVALID = "invalid budget"
CAUSE_UNMANAGED = "no controller"

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def _plural(count: int, word: str, plural: str = "") -> str:
    return "%d %s" % (count, word if count == 1 else (plural or word + "s"))


# --- nodes: what the scheduler checks before it places a pod -------------------------------------------------


def node_name(node: dict) -> str:
    return _dict(node.get("metadata")).get("name") or ""


def _node_labels(node: dict) -> "dict[str, str]":
    return _dict(_dict(node.get("metadata")).get("labels"))


def _taints(node: dict) -> "list[dict]":
    return [taint for taint in _list(_dict(node.get("spec")).get("taints")) if isinstance(taint, dict)]


def toleration_matches(toleration: Any, taint: dict) -> bool:
    """Whether a toleration tolerates a taint, as the scheduler decides (k8s.io/api/core/v1 ToleratesTaint)."""
    if not isinstance(toleration, dict):
        return False
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return not key or key == taint.get("key")
    if operator == "Equal":
        return key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def _tolerations(pod: dict) -> list:
    return _list(_dict(pod.get("spec")).get("tolerations"))


def untolerated_taints(pod: dict, node: dict) -> "list[str]":
    """``key=value:Effect`` of the node's NoSchedule and NoExecute taints the pod does not tolerate; the cordon's own
    taint (node.kubernetes.io/unschedulable) is left to the cordon, which the simulation lifts after a node's turn."""
    found = []
    for taint in _taints(node):
        if taint.get("effect") not in ("NoSchedule", "NoExecute") or taint.get("key") == UNSCHEDULABLE_TAINT:
            continue
        if not any(toleration_matches(toleration, taint) for toleration in _tolerations(pod)):
            value = taint.get("value")
            found.append("%s%s:%s" % (taint.get("key"), "=" + value if value else "", taint.get("effect")))
    return found


def _node_requirement(requirement: Any, labels: "dict[str, str]") -> bool:
    if not isinstance(requirement, dict):
        return False
    operator = requirement.get("operator")
    key = requirement.get("key")
    values = [str(value) for value in _list(requirement.get("values"))]
    if operator in ("Gt", "Lt"):
        try:
            have, want = int(labels[str(key)]), int(values[0])
        except (KeyError, IndexError, ValueError):
            return False
        return have > want if operator == "Gt" else have < want
    return _requirement_matches(dict(requirement, values=values), labels)


def _term_matches(term: Any, node: dict) -> bool:
    """A nodeSelectorTerm: all of its matchExpressions (labels) and matchFields (metadata.name) hold; an empty term
    matches no node."""
    if not isinstance(term, dict):
        return False
    expressions = _list(term.get("matchExpressions"))
    fields = _list(term.get("matchFields"))
    if not expressions and not fields:
        return False
    labels = _node_labels(node)
    name_field = {"metadata.name": node_name(node)}
    return (all(_node_requirement(requirement, labels) for requirement in expressions)
            and all(_node_requirement(requirement, name_field) for requirement in fields))


def node_selection_problem(pod: dict, node: dict) -> str:
    """Why the pod's nodeSelector or required node affinity excludes the node ('' when they let it in)."""
    spec = _dict(pod.get("spec"))
    labels = _node_labels(node)
    wrong = ["%s=%s" % (key, value) for key, value in sorted(_dict(spec.get("nodeSelector")).items())
             if labels.get(key) != value]
    if wrong:
        return "lacks nodeSelector label%s %s" % ("s" if len(wrong) > 1 else "", ", ".join(wrong))
    required = _dict(_dict(_dict(spec.get("affinity")).get("nodeAffinity")).get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required and not any(_term_matches(term, node) for term in _list(required.get("nodeSelectorTerms"))):
        return "does not match the pod's required node affinity"
    return ""


def _cordon_tolerated(pod: dict) -> bool:
    taint = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    return any(toleration_matches(toleration, taint) for toleration in _tolerations(pod))


# --- pods and budgets: the numbers the disruption controller and the eviction subresource use ----------------


def is_ready(pod: dict) -> bool:
    """The pod's Ready condition is True and it is not being deleted (the disruption controller's healthy)."""
    if _dict(pod.get("metadata")).get("deletionTimestamp"):
        return False
    return any(isinstance(condition, dict) and condition.get("type") == "Ready" and condition.get("status") == "True"
               for condition in _list(_dict(pod.get("status")).get("conditions")))


def scaled_value(value: Any, total: int) -> "int | None":
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true); None for a value it refuses."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not text.endswith("%"):
        return None
    try:
        percent = int(text[:-1])
    except ValueError:
        return None
    return int(math.ceil(percent * total / 100.0))


class Budget:
    """One PodDisruptionBudget and the numbers the disruption controller would give it."""

    def __init__(self, pdb: dict, scale: int):
        self.obj = pdb
        self.key = drain.pod_key(pdb)
        spec = _dict(pdb.get("spec"))
        self.min_available = spec.get("minAvailable")
        self.max_unavailable = spec.get("maxUnavailable")
        self.always_allow = spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
        self.scale = scale  # the controllers' replicas, for percentages and maxUnavailable

    def spec_text(self) -> str:
        if self.max_unavailable is not None:
            return "maxUnavailable: %s" % self.max_unavailable
        if self.min_available is not None:
            return "minAvailable: %s" % self.min_available
        return "neither minAvailable nor maxUnavailable"

    def numbers(self, selected: int) -> "tuple[int, int] | None":
        """(expected, desiredHealthy) for ``selected`` pods the budget selects now; None when the budget is invalid."""
        if self.max_unavailable is not None:
            unavailable = scaled_value(self.max_unavailable, self.scale)
            if unavailable is None:
                return None
            return self.scale, max(0, self.scale - unavailable)
        if self.min_available is not None:
            if isinstance(self.min_available, int) and not isinstance(self.min_available, bool):
                return selected, self.min_available
            available = scaled_value(self.min_available, self.scale)
            return None if available is None else (self.scale, available)
        return 0, 0


class _LabelIndex:
    """The pods by namespace and by label, so that a budget's selector is tried on the pods that may match only."""

    def __init__(self, pods: "dict[str, dict[str, Any]]"):
        self.labels: "dict[str, dict[str, str]]" = {}
        self.by_namespace: "dict[str, list[str]]" = {}
        self.by_label: "dict[tuple[str, str, Any], set[str]]" = {}
        for key, entry in pods.items():
            namespace = drain.pod_namespace(entry["pod"])
            labels = _dict(_dict(entry["pod"].get("metadata")).get("labels"))
            self.labels[key] = labels
            self.by_namespace.setdefault(namespace, []).append(key)
            for label, value in labels.items():
                self.by_label.setdefault((namespace, label, value), set()).add(key)

    def selected(self, pdb: dict) -> "list[str]":
        """The pods the budget selects (drain.pdb_selects), in the pods' order."""
        namespace = _dict(pdb.get("metadata")).get("namespace") or "default"
        selector = _dict(pdb.get("spec")).get("selector")
        candidates = self.by_namespace.get(namespace, [])
        match_labels = _dict(_dict(selector).get("matchLabels"))
        if match_labels:
            sets = [self.by_label.get((namespace, label, value), set()) for label, value in match_labels.items()]
            narrowed = set.intersection(*sets)
            candidates = [key for key in candidates if key in narrowed]
        return [key for key in candidates if drain.selector_matches(selector, self.labels[key])]


class Simulation:
    """The pods where the drains leave them, step after step."""

    def __init__(self, nodes: "list[dict]", pods: "list[dict]", pdbs: "list[dict]"):
        self.nodes = {node_name(node): node for node in nodes if node_name(node)}
        self.cordoned = {name for name, node in self.nodes.items() if _dict(node.get("spec")).get("unschedulable")}
        self.draining: "set[str]" = set()
        self.removed: "set[str]" = set()
        # Each pod that still exists: key -> {pod, node ('' while Pending for want of a node), healthy}.
        self.pods: "dict[str, dict[str, Any]]" = {}
        for pod in pods:
            if drain.is_terminated(pod):
                continue
            self.pods[drain.pod_key(pod)] = {
                "pod": pod,
                "node": _dict(pod.get("spec")).get("nodeName") or "",
                "healthy": is_ready(pod),
                "pending": _dict(pod.get("status")).get("phase") == "Pending",
            }
        self.load: "dict[str, int]" = {}  # pods per node, where the scheduler's spreading looks first
        for entry in self.pods.values():
            if entry["node"]:
                self.load[entry["node"]] = self.load.get(entry["node"], 0) + 1
        self.budgets: "dict[str, Budget]" = {}
        self.selected: "dict[str, list[str]]" = {}
        index = _LabelIndex(self.pods)
        for pdb in pdbs:
            keys = index.selected(pdb)
            status = _dict(pdb.get("status"))
            observed = status.get("observedGeneration")
            generation = _dict(pdb.get("metadata")).get("generation")
            if isinstance(status.get("expectedPods"), int) and observed is not None and observed == generation:
                scale = status["expectedPods"]
            else:
                scale = sum(1 for key in keys if drain.controller_of(self.pods[key]["pod"]) is not None)
            budget = Budget(pdb, scale)
            self.budgets[budget.key] = budget
            self.selected[budget.key] = keys
        # The budgets that select each pod (labels do not change while the drains run).
        self.budgets_of: "dict[str, list[str]]" = {}
        for budget_key in sorted(self.selected):
            for key in self.selected[budget_key]:
                self.budgets_of.setdefault(key, []).append(budget_key)

    # where a pod may run
    def exclusion(self, pod: dict, name: str) -> str:
        """Why the pod's replacement cannot run on the node now ('' when it can)."""
        if name in self.removed:
            return "removed"
        if name in self.draining:
            return "being drained"
        if name in self.cordoned and not _cordon_tolerated(pod):
            return "cordoned"
        taints = untolerated_taints(pod, self.nodes[name])
        if taints:
            return "taint %s not tolerated" % ", ".join(taints)
        return node_selection_problem(pod, self.nodes[name])

    def place(self, pod: dict) -> "tuple[str, dict[str, list[str]]]":
        """The node the pod's replacement would run on (the one with fewest pods, then by name), or '' and, per
        reason, the nodes it excludes."""
        fits, reasons = [], {}  # type: list[str], dict[str, list[str]]
        for name in sorted(self.nodes):
            why = self.exclusion(pod, name)
            if why:
                reasons.setdefault(why, []).append(name)
            else:
                fits.append(name)
        if not fits:
            return "", reasons
        return min(fits, key=lambda name: (self.load.get(name, 0), name)), reasons

    def move(self, key: str, where: "str | None") -> None:
        """The pod now runs on ``where`` ('' while Pending; None when it is gone for good)."""
        entry = self.pods[key]
        if entry["node"]:
            self.load[entry["node"]] -= 1
        if where is None:
            del self.pods[key]
            return
        if where:
            self.load[where] = self.load.get(where, 0) + 1
        entry["node"], entry["pending"] = where, not where

    def counts(self, budget: Budget) -> "tuple[int, int, int, int] | None":
        """(selected, healthy, expected, desired) now; None for an invalid budget."""
        entries = [self.pods[key] for key in self.selected[budget.key] if key in self.pods]
        numbers = budget.numbers(len(entries))
        if numbers is None:
            return None
        healthy = sum(1 for entry in entries if entry["healthy"] and entry["node"])
        return len(entries), healthy, numbers[0], numbers[1]

    def may_evict(self, budget: Budget, entry: "dict[str, Any]") -> bool:
        """Whether the API server would let this pod's eviction through now (eviction.go)."""
        if entry["pending"] or not entry["node"]:
            return True  # canIgnorePDB: a Pending pod is deleted without asking
        counts = self.counts(budget)
        if counts is None:
            return False
        dummy, healthy, expected, desired = counts
        if not entry["healthy"]:
            if budget.always_allow or (healthy >= desired and desired > 0):
                return True
        return expected > 0 and healthy - desired > 0

    def evict(self, key: str) -> "dict[str, list[str]] | None":
        """The pod goes; its replacement (when a controller makes one) runs where it can. The reasons per node when
        the replacement stays Pending, else None."""
        entry = self.pods[key]
        if drain.controller_of(entry["pod"]) is None:
            self.move(key, None)  # nothing recreates it
            return None
        where, reasons = self.place(entry["pod"])
        self.move(key, where)
        return None if where else reasons

    def place_pending(self) -> None:
        """The replacements waiting for a node run as soon as one lets them."""
        for key, entry in self.pods.items():
            if not entry["node"]:
                where, dummy = self.place(entry["pod"])
                if where:
                    self.move(key, where)


def describe_exclusions(reasons: "dict[str, list[str]]") -> str:
    """``cp1, cp2: taint ... not tolerated; w1: being drained``, the nodes grouped by reason."""
    if not reasons:
        return "the cluster has no other node"
    return "; ".join("%s: %s" % (", ".join(names), why) for why, names in sorted(reasons.items(), key=lambda item: item[1]))


def _fix(cause: str, budget: Budget, counts: "tuple[int, int, int, int] | None", node_names: "list[str]",
         on_node: int) -> str:
    if cause == CAUSE_INVALID:
        return ("write minAvailable or maxUnavailable as a number or a percentage like 50%% (the disruption controller "
                "refuses %s and lets no eviction through)" % budget.spec_text())
    selected, healthy, expected, desired = counts or (0, 0, 0, 0)
    if cause == CAUSE_BUDGET:
        if budget.max_unavailable is not None:
            return "let the budget allow one eviction (maxUnavailable: 1 or a percentage above 0)"
        if budget.min_available is None:
            return "set minAvailable or maxUnavailable: a budget with neither lets no eviction through"
        return ("run more replicas than the budget needs healthy (%d or more), or lower minAvailable below %d, or use "
                "maxUnavailable: 1" % (desired + 1, max(expected, selected)))
    if cause == CAUSE_UNHEALTHY:
        return ("make the budget's pods Ready first (%d of the %d it needs are healthy), or set "
                "unhealthyPodEvictionPolicy: AlwaysAllow so that unready pods may be evicted" % (healthy, desired))
    return ("add a node these pods can run on (a worker, or capacity that their nodeSelector, affinity and "
            "tolerations allow), or drain another node first that makes room for them before %s, or accept the "
            "outage with a budget that allows all %s at once (maxUnavailable: %d)"
            % (", ".join(node_names), _plural(on_node, "eviction"), on_node))


def _ignored(budget_keys: "list[str]", ignore: "set[str]", ignore_all: bool) -> bool:
    return ignore_all or (bool(budget_keys) and all(key in ignore for key in budget_keys))


def drain_blockers(
    nodes: "list[dict]",
    pods: "list[dict]",
    pdbs: "list[dict]",
    order: "Iterable[Any]",
    after: str = "uncordoned",
    ignore: "Iterable[str]" = (),
    force: bool = False,
) -> "dict[str, Any]":
    """Play the drains through in ``order`` (each item a node name, or a list of names drained together).

    Returns ``problems`` (bad input: nodes not in the cluster, ``ignore`` naming no budget, an unknown ``after``),
    ``drains`` (per step: nodes, pods evicted, pods whose replacement would stay Pending), ``blockers`` (one entry per
    budget and step that would refuse an eviction for good, with node, budget, pods, cause, why, fix and message) and
    ``ignored`` (those that ``ignore`` lets through: ``namespace/name`` of budgets, or ``all``). Without ``force``
    (node_drain's), a pod without a controller is refused by the drain: a blocker of no budget, which only ``all``
    lets through.
    """
    problems: "list[str]" = []
    if after not in AFTER_CHOICES:
        problems.append("after: %r is not one of %s" % (after, ", ".join(AFTER_CHOICES)))
    steps: "list[list[str]]" = []
    for item in order or []:
        names = [str(name) for name in (item if isinstance(item, (list, tuple)) else [item]) if str(name)]
        if names:
            steps.append(names)
    sim = Simulation(nodes, pods, pdbs)
    unknown = sorted({name for step in steps for name in step if name not in sim.nodes})
    if unknown:
        problems.append("node%s %s to drain %s not in the cluster (no Node object): name nodes that kubectl get nodes "
                        "lists" % ("s" if len(unknown) > 1 else "", ", ".join(unknown), "are" if len(unknown) > 1 else "is"))
    ignore_list = [str(entry).strip() for entry in ignore or [] if str(entry).strip()]
    ignore_all = any(entry.lower() in IGNORE_ALL for entry in ignore_list)
    ignore_set = {entry for entry in ignore_list if entry.lower() not in IGNORE_ALL}
    not_budgets = sorted(ignore_set - set(sim.budgets))
    if not_budgets:
        problems.append("ignore: %s %s no PodDisruptionBudget of the cluster; write namespace/name of a budget "
                        "(kubectl get pdb -A), or all" % (", ".join(not_budgets), "names" if len(not_budgets) == 1 else "name"))
    result: "dict[str, Any]" = {"problems": problems, "drains": [], "blockers": [], "ignored": []}
    if problems:
        return result

    for step in steps:
        sim.draining = set(step)
        on_step = [entry["pod"] for entry in sim.pods.values() if entry["node"] in sim.draining]
        plan = drain.plan_drain(on_step, force=force)
        evicted: "list[str]" = []
        pending: "list[dict[str, str]]" = []
        by_budget: "dict[str, list[str]]" = {}
        findings: "list[dict[str, Any]]" = [
            {"budgets": [], "cause": CAUSE_UNMANAGED, "pods": ["%s/%s" % (entry["namespace"], entry["name"])]}
            for entry in plan.refused if entry["reason"] == drain.REFUSE_UNMANAGED]
        for pod in plan.evict:
            key = drain.pod_key(pod)
            budgets = sim.budgets_of.get(key, [])
            if len(budgets) > 1:
                findings.append({"budgets": budgets, "cause": CAUSE_SEVERAL, "pods": [key]})
                continue
            if budgets:
                by_budget.setdefault(budgets[0], []).append(key)
                continue
            reasons = sim.evict(key)
            evicted.append(key)
            if reasons is not None:
                pending.append({"pod": key, "why": describe_exclusions(reasons)})
        for budget_key in sorted(by_budget):
            budget = sim.budgets[budget_key]
            # Unready pods first: their evictions do not count against the budget while it is not disrupted.
            keys = sorted(by_budget[budget_key], key=lambda k: (sim.pods[k]["healthy"], k))
            counts_before = sim.counts(budget)
            refused: "list[str]" = []
            stuck: "list[dict[str, str]]" = []
            for key in keys:
                if not sim.may_evict(budget, sim.pods[key]):
                    refused.append(key)
                    continue
                reasons = sim.evict(key)
                evicted.append(key)
                if reasons is not None:
                    stuck.append({"pod": key, "why": describe_exclusions(reasons)})
            pending.extend(stuck)
            if not refused:
                continue
            cause = _cause(sim, budget, counts_before, stuck)
            findings.append({"budgets": [budget_key], "cause": cause, "pods": refused, "stuck": stuck,
                             "counts": counts_before, "on_node": len(keys)})
        for finding in findings:
            result_entry = _blocker(sim, step, finding)
            ignored = _ignored(finding["budgets"], ignore_set, ignore_all)
            result["ignored" if ignored else "blockers"].append(result_entry)
        result["drains"].append({"nodes": list(step), "evict": evicted, "pending": pending})
        # After the node's turn: back and schedulable (upgrade), or gone with the pods the drain left (remove_node).
        sim.draining = set()
        if after == "removed":
            sim.removed |= set(step)
            for key, entry in sim.pods.items():
                if entry["node"] in sim.removed:
                    sim.move(key, "")
        else:
            sim.cordoned -= set(step)
        sim.place_pending()
    return result


def _cause(sim: Simulation, budget: Budget, counts: "tuple[int, int, int, int] | None",
           stuck: "list[dict[str, str]]") -> str:
    """Why the budget refuses, from its numbers when this node's turn came."""
    if counts is None:
        return CAUSE_INVALID
    dummy, healthy, expected, desired = counts
    if stuck or (expected > 0 and healthy - desired > 0):
        return CAUSE_PLACEMENT  # evictions went through until the replacements found no node
    if expected <= 0 or expected - desired <= 0:
        return CAUSE_BUDGET  # even with every pod healthy
    if any(key in sim.pods and not sim.pods[key]["node"] for key in sim.selected[budget.key]):
        return CAUSE_PLACEMENT  # replacements from an earlier drain still wait for a node
    return CAUSE_UNHEALTHY


def _blocker(sim: Simulation, step: "list[str]", finding: "dict[str, Any]") -> "dict[str, Any]":
    budgets = finding["budgets"]
    cause = finding["cause"]
    pods = finding["pods"]
    node_names = sorted({sim.pods[key]["node"] or "" for key in pods if key in sim.pods} - {""}) or list(step)
    where = ", ".join(node_names)
    if cause == CAUSE_UNMANAGED:
        why = "%s has no controller: nothing would recreate it, so the drain refuses to evict it" % ", ".join(pods)
        fix = ("delete the pod yourself, or run it under a controller such as a Deployment (remove_node.yml: or "
               "remove_node_force: true, which evicts it for good)")
    elif cause == CAUSE_SEVERAL:
        why = ("PodDisruptionBudgets %s all select %s, and the API server refuses to evict a pod that more than one "
               "budget selects" % (", ".join(budgets), ", ".join(pods)))
        fix = "change the budgets' selectors so that one budget at most selects each pod"
    else:
        budget = sim.budgets[budgets[0]]
        counts = finding["counts"]
        if cause == CAUSE_INVALID:
            why = "its %s is not a number or a percentage" % budget.spec_text()
        else:
            selected, healthy, expected, desired = counts
            numbers = ("%s, so it needs %d healthy of %s and has %d"
                       % (budget.spec_text(), desired, _plural(expected, "pod"), healthy))
            if cause == CAUSE_BUDGET:
                why = "%s: it allows no eviction at all" % numbers
            elif cause == CAUSE_UNHEALTHY:
                unready = sorted(key for key in sim.selected[budget.key]
                                 if key in sim.pods and not sim.pods[key]["healthy"])
                why = "%s: it allows no eviction while %s %s not Ready" % (
                    numbers, ", ".join(unready) or "pods", "is" if len(unready) == 1 else "are")
            else:
                stuck = finding.get("stuck") or []
                elsewhere = [entry for key, entry in sim.pods.items()
                             if key in sim.selected[budget.key] and not entry["node"] and key not in
                             {item["pod"] for item in stuck}]
                gone = ["%s has nowhere to run (%s)" % (item["pod"], item["why"]) for item in stuck]
                if elsewhere:
                    gone.append("%s still wait%s for a node after an earlier drain"
                                % (", ".join(drain.pod_key(entry["pod"]) for entry in elsewhere),
                                   "s" if len(elsewhere) == 1 else ""))
                if not gone:
                    reasons = sim.place(sim.pods[pods[0]]["pod"])[1]
                    gone.append("the evicted pods' replacements have nowhere to run (%s)" % describe_exclusions(reasons))
                why = "%s; once evicted, %s" % (numbers, "; ".join(gone))
        fix = _fix(cause, budget, counts, node_names, finding.get("on_node", len(pods)))
    if budgets:
        subject = "PodDisruptionBudget%s %s would refuse the eviction of %s" % (
            "s" if len(budgets) > 1 else "", ", ".join(budgets), ", ".join(pods))
    else:
        subject = "the drain would refuse %s" % ", ".join(pods)
    message = "node %s: %s (%s): %s. To drain it: %s" % (where, subject, cause, why, fix)
    return {"node": where, "nodes": node_names, "step": list(step), "budgets": budgets, "pods": list(pods),
            "cause": cause, "why": why, "fix": fix, "message": message}
