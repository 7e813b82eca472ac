"""The operator's pure decisions (operator/slipway_operator/logic.py): coalescing, backoff, status to
metrics and Events. The component catalogue is the collection's own (plugins/module_utils, loaded by
slipway_operator.collection from the checkout's link under .cache/collections)."""

from __future__ import annotations

import os

import pytest

from slipway_operator import collection, logic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COLLECTIONS = os.path.join(ROOT, ".cache", "collections")
CATALOGUE = collection.planner(COLLECTIONS).CATALOGUE


# --- coalescing -------------------------------------------------------------------------------------

def test_nothing_pending_is_never_due():
    debouncer = logic.Debouncer(quiet=2, max_wait=30)
    assert not debouncer.pending and debouncer.deadline() is None and not debouncer.due(1e9)


def test_a_burst_becomes_one_reconcile_after_it_goes_quiet():
    debouncer = logic.Debouncer(quiet=2, max_wait=30)
    for now in (100.0, 100.5, 101.0, 102.5):
        debouncer.trigger("spec", now)
    assert not debouncer.due(104.4), "still within 2 s of the last edit"
    assert debouncer.due(104.5)
    assert debouncer.take() == ["spec"]
    assert not debouncer.pending and not debouncer.due(1e9), "the burst is consumed once"


def test_a_steady_stream_is_reconciled_by_max_wait():
    debouncer = logic.Debouncer(quiet=2, max_wait=5)
    for step in range(20):
        debouncer.trigger("spec", 100.0 + step)  # an edit every second, never 2 s quiet
    assert debouncer.deadline() == 105.0
    assert debouncer.due(105.0)


def test_sources_are_kept_in_order_once_each():
    debouncer = logic.Debouncer(quiet=1, max_wait=10)
    for source in ("spec", "resync", "spec", "retry"):
        debouncer.trigger(source, 0.0)
    assert debouncer.take() == ["spec", "resync", "retry"]


def test_a_trigger_after_take_starts_a_new_burst():
    debouncer = logic.Debouncer(quiet=1, max_wait=10)
    debouncer.trigger("spec", 0.0)
    debouncer.take()
    debouncer.trigger("spec", 50.0)
    assert debouncer.deadline() == 51.0


# --- backoff ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("attempt,expected", [(0, 0.0), (1, 10.0), (2, 20.0), (3, 40.0), (5, 160.0), (6, 300.0), (100, 300.0)])
def test_backoff_doubles_up_to_the_maximum(attempt, expected):
    assert logic.backoff_delay(attempt, base=10, maximum=300) == expected


# --- what a reconcile runs ---------------------------------------------------------------------------

@pytest.mark.parametrize("sources,reapply", [(["spec"], False), (["retry"], False), (["resync"], True), (["spec", "resync"], True)])
def test_only_a_resync_reapplies_every_enabled_component(sources, reapply):
    variables = logic.playbook_vars(sources, "/k", {"kubesphere_wait": False})
    assert variables["kubesphere_reapply"] is reapply
    assert variables["kubesphere_kubeconfig"] == "/k" and variables["kubesphere_cluster_configuration"] == {}
    assert variables["kubesphere_wait"] is False


def test_settings_cannot_turn_the_resync_off_or_on():
    assert logic.playbook_vars(["spec"], "/k", {"kubesphere_reapply": True})["kubesphere_reapply"] is False


# --- status to metrics ------------------------------------------------------------------------------

STATUS = {
    "clusterId": "x",
    "core": {"status": "enabled", "enabledTime": "2023-06-21T12:20:31CST"},  # written by ks-installer
    "monitoring": {"status": "enabled", "slipway": {"specHash": "m1"}},
    "alerting": {"status": "failed", "slipway": {"specHash": "a1", "reason": "the API server refused it"}},
    "events": {"status": "enabled", "slipway": {"specHash": "e1"},
               "ruler": {"status": "disabled"}},  # nested under its parent, as ks-installer keys it
    "metricsServer": {"status": "enabled", "slipway": {"specHash": "ms"}},
    "logging": {"status": "installing"},  # not a status we know: not counted
}


def test_component_states_follow_the_collections_status_keys():
    states = logic.component_states(STATUS, CATALOGUE)
    assert set(states) == {"core", "monitoring", "alerting", "events", "events.ruler", "metrics_server"}
    assert states["core"] == {"status": "enabled", "specHash": None, "reason": None}
    assert states["alerting"]["reason"] == "the API server refused it"
    assert states["events.ruler"]["status"] == "disabled"


def test_status_counts_name_every_status():
    assert logic.status_counts(logic.component_states(STATUS, CATALOGUE)) == {"enabled": 4, "failed": 1, "disabled": 1}
    assert logic.status_counts({}) == {"enabled": 0, "failed": 0, "disabled": 0}
    assert logic.component_states(None, CATALOGUE) == {}


def test_failed_components():
    assert logic.failed_components(logic.component_states(STATUS, CATALOGUE)) == ["alerting"]


# --- Events -----------------------------------------------------------------------------------------

def _state(status, spec_hash=None, reason=None):
    return {"status": status, "specHash": spec_hash, "reason": reason}


@pytest.mark.parametrize("before,after,expected", [
    (None, _state("enabled", "h"), ("Normal", logic.REASON_INSTALLED, "alerting installed")),
    (_state("disabled"), _state("enabled", "h"), ("Normal", logic.REASON_INSTALLED, "alerting installed")),
    (_state("failed", "h", "x"), _state("enabled", "h"), ("Normal", logic.REASON_INSTALLED, "alerting installed")),
    (_state("enabled", "h1"), _state("enabled", "h2"),
     ("Normal", logic.REASON_REAPPLIED, "alerting reapplied after its spec changed")),
    (_state("enabled", "h"), _state("disabled"), ("Normal", logic.REASON_REMOVED, "alerting removed")),
    (_state("failed", "h", "x"), _state("disabled"), ("Normal", logic.REASON_REMOVED, "alerting removed")),
    (None, _state("failed", "h", "refused"), ("Warning", logic.REASON_FAILED, "alerting failed: refused")),
    (_state("failed", "h", "old"), _state("failed", "h", "new"), ("Warning", logic.REASON_FAILED, "alerting failed: new")),
    (_state("enabled", "h"), _state("failed", "h2", None),
     ("Warning", logic.REASON_FAILED, "alerting failed: no reason recorded")),
])
def test_each_transition_gives_its_event(before, after, expected):
    changes = logic.transitions({} if before is None else {"alerting": before}, {"alerting": after})
    assert [(change.type, change.reason, change.message) for change in changes] == [expected]
    assert changes[0].component == "alerting"


@pytest.mark.parametrize("before,after", [
    (_state("enabled", "h"), _state("enabled", "h")),  # nothing to do
    (_state("enabled"), _state("enabled")),  # ks-installer's entry, left as it is
    (_state("failed", "h", "same"), _state("failed", "h", "same")),  # a retry that failed the same way again
    (None, _state("disabled")),  # recorded off, never installed
    (_state("disabled"), _state("disabled")),
])
def test_no_event_without_a_change(before, after):
    assert not logic.transitions({} if before is None else {"alerting": before}, {"alerting": after})


# --- the reconcile loop (app.Reconciler) with the playbook replaced by a recorder ---------------------

class _Recorder:
    """Stands in for Reconciler.reconcile: records each call's sources, answers results in turn."""

    def __init__(self, results):
        self.calls = []
        self.results = list(results)

    async def __call__(self, sources):
        self.calls.append(sources)
        return self.results.pop(0) if self.results else "success"


def _reconciler(tmp_path, results, **options):
    from slipway_operator import app  # pylint: disable=import-outside-toplevel  # needs prometheus_client
    settings = app.Options(kubeconfig="unused", workdir=str(tmp_path), **{"debounce": 0.05, "max_wait": 5.0,
                                                                          "backoff_base": 0.05, "backoff_max": 0.2, **options})
    reconciler = app.Reconciler(settings, app.Metrics(), CATALOGUE, api_client=None)
    recorder = _Recorder(results)
    reconciler.reconcile = recorder
    return reconciler, recorder


async def _until(predicate, limit=200):
    import asyncio  # pylint: disable=import-outside-toplevel
    for _attempt in range(limit):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the loop never got there")


def test_a_burst_of_triggers_runs_one_reconcile(tmp_path):
    import asyncio  # pylint: disable=import-outside-toplevel
    reconciler, recorder = _reconciler(tmp_path, ["success"])

    async def scenario():
        loop = asyncio.ensure_future(reconciler.run())
        for _edit in range(5):
            reconciler.trigger("spec")
        reconciler.trigger("resync")
        await _until(lambda: recorder.calls)
        await asyncio.sleep(0.2)  # room for a wrong second reconcile to happen
        loop.cancel()

    asyncio.run(scenario())
    assert recorder.calls == [["spec", "resync"]]
    assert reconciler.metrics.triggers.labels(source="spec")._value.get() == 5  # pylint: disable=protected-access


def test_a_failed_reconcile_is_retried_with_backoff_until_it_succeeds(tmp_path):
    import asyncio  # pylint: disable=import-outside-toplevel
    reconciler, recorder = _reconciler(tmp_path, ["component_failed", "error", "success"])

    async def scenario():
        loop = asyncio.ensure_future(reconciler.run())
        reconciler.trigger("spec")
        await _until(lambda: len(recorder.calls) == 3)
        await asyncio.sleep(0.3)  # longer than the largest backoff: no retry after the success
        loop.cancel()

    asyncio.run(scenario())
    assert recorder.calls == [["spec"], ["retry"], ["retry"]]
    assert reconciler.attempt == 0 and reconciler.retry_at is None


# --- whether a reconcile runs the playbook: the collection's own plan ----------------------------------

PLANNER = collection.planner(COLLECTIONS)


def _cc(spec, status=None):
    return {"metadata": {"name": "ks-installer", "namespace": "kubesphere-system"}, "spec": spec, "status": status or {}}


def test_a_spec_edit_with_nothing_to_do_runs_no_playbook():
    # core and monitoring as ks-installer leaves them: enabled and current for the plan.
    status = {"core": {"status": "enabled"}, "monitoring": {"status": "enabled"}}
    actions = logic.pending_actions(_cc({}, status), PLANNER)
    assert actions == {"install": [], "reapply": [], "uninstall": []}
    assert not logic.needs_playbook(["spec"], actions)


def test_a_component_switched_on_runs_the_playbook():
    status = {"core": {"status": "enabled"}, "monitoring": {"status": "enabled"}}
    actions = logic.pending_actions(_cc({"alerting": {"enabled": True}}, status), PLANNER)
    assert actions["install"] == ["alerting"]
    assert logic.needs_playbook(["spec"], actions)


@pytest.mark.parametrize("sources", [["resync"], ["retry"], ["spec", "resync"]])
def test_the_resync_and_retries_always_run_the_playbook(sources):
    assert logic.needs_playbook(sources, {"install": [], "reapply": [], "uninstall": []})


def test_no_resource_is_something_to_do():
    assert logic.needs_playbook(["spec"], logic.pending_actions(None, PLANNER))


# --- the runs' ansible.cfg --------------------------------------------------------------------------

def test_the_runs_ansible_cfg_sets_the_poll_interval_ansible_reads(tmp_path):
    from ansible.config.manager import ConfigManager  # pylint: disable=import-outside-toplevel
    path = logic.ansible_config(tmp_path / "work")
    assert path == str(tmp_path / "work" / "ansible.cfg")
    assert ConfigManager(conf_file=path).get_config_value("DEFAULT_INTERNAL_POLL_INTERVAL") == 0.01


def test_the_runs_ansible_cfg_injects_no_facts_as_variables(tmp_path):
    # As the checkout's ansible.cfg: the runs prove the playbooks read facts only as ansible_facts['name'].
    from ansible.config.manager import ConfigManager  # pylint: disable=import-outside-toplevel
    assert ConfigManager(conf_file=logic.ansible_config(tmp_path)).get_config_value("INJECT_FACTS_AS_VARS") is False
