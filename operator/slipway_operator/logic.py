"""The operator's decisions in pure Python (no kopf, no Kubernetes client): every rule is a unit test.

- ``Debouncer``: a burst of triggers becomes one reconcile, run once the burst has been quiet for
  ``quiet`` seconds (but never later than ``max_wait`` after its first trigger).
- ``backoff_delay``: when a failed component is retried.
- ``component_states`` / ``status_counts``: the components and their statuses as the collection's
  own catalogue (plugins/module_utils/_cluster_configuration.py, loaded by collection.planner) reads them from the
  resource.
- ``transitions``: the Events a reconcile posts, from the statuses before and after it.
- ``ansible_config``: the ansible.cfg of the playbook runs in the operator's and the fleet's pods (the poll interval,
  facts not injected as variables).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("enabled", "failed", "disabled")

# Event reasons, one per transition a reconcile can make (kubectl describe cc ks-installer shows them).
REASON_INSTALLED = "ComponentInstalled"
REASON_REAPPLIED = "ComponentReapplied"
REASON_REMOVED = "ComponentRemoved"
REASON_FAILED = "ComponentFailed"
REASON_RECONCILE_FAILED = "ReconcileFailed"


@dataclass
class Debouncer:
    """Coalesces triggers: ``due(now)`` turns true ``quiet`` s after the last trigger of a burst.

    ``max_wait`` bounds how long a steady stream of edits can postpone the reconcile.
    """

    quiet: float
    max_wait: float
    _first: float | None = None
    _last: float | None = None
    _reasons: list[str] = field(default_factory=list)

    def trigger(self, reason: str, now: float) -> None:
        if self._first is None:
            self._first = now
        self._last = now
        if reason not in self._reasons:
            self._reasons.append(reason)

    @property
    def pending(self) -> bool:
        return self._first is not None

    def deadline(self) -> float | None:
        """When the pending burst becomes due, or None when nothing is pending."""
        if self._first is None or self._last is None:
            return None
        return min(self._last + self.quiet, self._first + self.max_wait)

    def due(self, now: float) -> bool:
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def take(self) -> list[str]:
        """The reasons of the burst, which is then forgotten (triggers after this start a new one)."""
        reasons, self._reasons = self._reasons, []
        self._first = self._last = None
        return reasons


# ansible-playbook's main process checks on its workers every internal_poll_interval while a task runs: Ansible's
# 0.001 s costs about 6 % of a core per waiting run (docs/performance.md), 0.01 s almost nothing, and a task's result
# is seen at most 10 ms later. The setting has no environment variable: it is written to the run's ansible.cfg.
# Facts reach the playbooks only as ansible_facts['name'], as in the checkout's ansible.cfg: ansible-core 2.20
# deprecates facts injected as top-level variables and 2.24 removes them.
ANSIBLE_CFG = "[defaults]\ninternal_poll_interval = 0.01\ninject_facts_as_vars = False\n"


def ansible_config(directory: Path) -> str:
    """Writes the runs' ansible.cfg into ``directory``; its path is the run's ANSIBLE_CONFIG."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "ansible.cfg"
    path.write_text(ANSIBLE_CFG, encoding="utf-8")
    return str(path)


def backoff_delay(attempt: int, base: float, maximum: float) -> float:
    """Seconds before retry number ``attempt`` (1 for the first retry): base, 2 base, 4 base... up to maximum."""
    if attempt < 1:
        return 0.0
    return float(min(maximum, base * (2 ** min(attempt - 1, 32))))


def playbook_vars(sources: list[str], kubeconfig: str, extra: dict) -> dict:
    """The variables of one run of playbooks/kubesphere.yml for a reconcile asked for by ``sources``."""
    variables = {"kubesphere_kubeconfig": kubeconfig,
                 # The stored ClusterConfiguration is the input: apply nothing over it.
                 "kubesphere_cluster_configuration": {},
                 "kubesphere_cluster_configuration_merge_type": "merge",
                 # The image holds the client; a failed component is read from status, not from the run's result.
                 "kubesphere_python_packages": [],
                 "kubesphere_fail_on_component_failure": False}
    variables.update(extra)
    # The periodic resync repairs drift: every enabled component is applied again, so an object deleted
    # or edited by hand comes back. Edits and retries act on what changed only.
    variables["kubesphere_reapply"] = "resync" in sources
    return variables


# What a run of playbooks/kubesphere.yml acts on: without any of these in the plan it changes nothing.
PLAYBOOK_ACTIONS = ("install", "reapply", "uninstall")


def pending_actions(obj: dict | None, planner) -> dict[str, list[str]]:
    """The plan's install, reapply and uninstall lists for the stored resource, computed with the
    collection's own plan (the one the playbook's cluster_configuration_info task computes)."""
    if obj is None:
        return {action: ["(no ClusterConfiguration)"] for action in PLAYBOOK_ACTIONS}
    summary = planner.summarize(planner.plan(obj.get("spec") or {}, obj.get("status") or {}))
    return {action: list(summary.get(action) or []) for action in PLAYBOOK_ACTIONS}


def needs_playbook(sources: list[str], actions: dict[str, list[str]]) -> bool:
    """Whether a reconcile runs the playbook. An edit of spec with nothing to install, reapply or
    remove changes nothing, so it is skipped; the resync (drift repair) and the retries always run it."""
    if any(source != "spec" for source in sources):
        return True
    return any(actions.get(action) for action in PLAYBOOK_ACTIONS)


def _entry(status: Any, path: tuple) -> dict | None:
    value = status
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value if isinstance(value, dict) else None


def component_states(status: dict | None, catalogue) -> dict[str, dict]:
    """Each component with a status entry: {name: {status, specHash, reason}}."""
    states = {}
    for component in catalogue:
        entry = _entry(status or {}, tuple(component.status_path))
        if entry is None or entry.get("status") not in STATUSES:
            continue
        slipway = entry.get("slipway")
        record = slipway if isinstance(slipway, dict) else {}
        states[component.name] = {"status": entry["status"], "specHash": record.get("specHash"),
                                  "reason": record.get("reason")}
    return states


def status_counts(states: dict[str, dict]) -> dict[str, int]:
    """How many components have each status (every status named, zeros included, for a gauge)."""
    counts = dict.fromkeys(STATUSES, 0)
    for state in states.values():
        counts[state["status"]] += 1
    return counts


@dataclass(frozen=True)
class Transition:
    """One Event to post: Normal or Warning, its reason and message."""

    component: str
    type: str
    reason: str
    message: str


def transitions(before: dict[str, dict], after: dict[str, dict]) -> list[Transition]:
    """What a reconcile did to each component, read from the statuses before and after it."""
    result = []
    for name, state in after.items():
        old = before.get(name)
        if state["status"] == "failed":
            if old != state:
                reason = state.get("reason") or "no reason recorded"
                result.append(Transition(name, "Warning", REASON_FAILED, f"{name} failed: {reason}"))
        elif state["status"] == "enabled":
            if old is None or old["status"] != "enabled":
                result.append(Transition(name, "Normal", REASON_INSTALLED, f"{name} installed"))
            elif old.get("specHash") != state.get("specHash"):
                result.append(Transition(name, "Normal", REASON_REAPPLIED, f"{name} reapplied after its spec changed"))
        elif state["status"] == "disabled" and old is not None and old["status"] != "disabled":
            result.append(Transition(name, "Normal", REASON_REMOVED, f"{name} removed"))
    return result


def failed_components(states: dict[str, dict]) -> list[str]:
    return sorted(name for name, state in states.items() if state["status"] == "failed")
