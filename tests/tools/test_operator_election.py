"""Leader election (operator/slipway_operator/election.py) against an in-memory Lease API that keeps
the API server's rules: a create of an existing name is a 409, a replace with a stale resourceVersion is
a 409. Time is the electors' own monotonic clock, moved by the test."""

from __future__ import annotations

import copy
import datetime
from types import SimpleNamespace

import pytest
from kubernetes.client import exceptions as kubernetes_exceptions

from slipway_operator import election


class FakeLeases:
    """One namespace's Leases as the API server keeps them (resourceVersion bumped on every write)."""

    def __init__(self):
        self.stored: dict[str, dict] = {}
        self.version = 0

    def _conflict(self):
        return kubernetes_exceptions.ApiException(status=409, reason="Conflict")

    def _object(self, body):
        spec = body["spec"]

        def when(text):
            return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ") if text else None
        return SimpleNamespace(
            metadata=SimpleNamespace(resource_version=body["metadata"]["resourceVersion"]),
            spec=SimpleNamespace(holder_identity=spec.get("holderIdentity"), lease_duration_seconds=spec.get("leaseDurationSeconds"),
                                 renew_time=spec.get("renewTime"), acquire_time=when(spec.get("acquireTime")),
                                 lease_transitions=spec.get("leaseTransitions")))

    def read_namespaced_lease(self, name, namespace):
        if name not in self.stored:
            raise kubernetes_exceptions.ApiException(status=404, reason="Not Found")
        return self._object(self.stored[name])

    def create_namespaced_lease(self, namespace, body):
        name = body["metadata"]["name"]
        if name in self.stored:
            raise self._conflict()
        self.version += 1
        self.stored[name] = copy.deepcopy(body)
        self.stored[name]["metadata"]["resourceVersion"] = str(self.version)

    def replace_namespaced_lease(self, name, namespace, body):
        if self.stored[name]["metadata"]["resourceVersion"] != body["metadata"].get("resourceVersion"):
            raise self._conflict()
        self.version += 1
        self.stored[name] = copy.deepcopy(body)
        self.stored[name]["metadata"]["resourceVersion"] = str(self.version)

    def holder(self, name="slipway-operator"):
        return self.stored[name]["spec"]["holderIdentity"]


@pytest.fixture(name="clock")
def fixture_clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(election.time, "monotonic", lambda: now[0])
    return now


def elector(api, identity):
    return election.LeaseElector(api, "kubesphere-system", "slipway-operator", identity, duration=15, deadline=10, retry=2)


def test_the_first_candidate_leads_and_the_second_waits(clock):
    api = FakeLeases()
    first, second = elector(api, "a"), elector(api, "b")
    assert first.try_acquire_or_renew() is True
    assert second.try_acquire_or_renew() is False
    assert api.holder() == "a"
    clock[0] += 14
    assert first.try_acquire_or_renew() is True, "the holder renews"
    clock[0] += 14
    assert second.try_acquire_or_renew() is False, "renewed 14 s ago: not expired"
    assert api.holder() == "a"


def test_a_silent_leader_is_replaced_after_the_lease_duration(clock):
    api = FakeLeases()
    first, second = elector(api, "a"), elector(api, "b")
    first.try_acquire_or_renew()
    assert second.try_acquire_or_renew() is False  # second sees the record now
    clock[0] += 14.9
    assert second.try_acquire_or_renew() is False
    clock[0] += 0.1
    assert second.try_acquire_or_renew() is True
    assert api.holder() == "b" and api.stored["slipway-operator"]["spec"]["leaseTransitions"] == 1
    assert first.try_acquire_or_renew() is False, "the old leader finds another holder and must stop"


def test_of_two_candidates_racing_on_one_version_only_one_wins(clock):
    api = FakeLeases()
    elector(api, "a").try_acquire_or_renew()
    late_b, late_c = elector(api, "b"), elector(api, "c")
    late_b.try_acquire_or_renew()
    late_c.try_acquire_or_renew()
    clock[0] += 20
    # Both read the same expired record; the first write wins, the second is refused by its resourceVersion.
    stale = api.read_namespaced_lease("slipway-operator", "kubesphere-system")
    original_read = api.read_namespaced_lease
    api.read_namespaced_lease = lambda name, namespace: stale
    results = [late_b.try_acquire_or_renew(), late_c.try_acquire_or_renew()]
    api.read_namespaced_lease = original_read
    assert results == [True, False]
    assert api.holder() == "b"


def test_a_create_race_has_one_winner(clock):  # pylint: disable=unused-argument  # the clock is frozen
    api = FakeLeases()
    first, second = elector(api, "a"), elector(api, "b")
    original_read = api.read_namespaced_lease

    def read_missing(name, namespace):
        raise kubernetes_exceptions.ApiException(status=404, reason="Not Found")
    api.read_namespaced_lease = read_missing
    results = [first.try_acquire_or_renew(), second.try_acquire_or_renew()]
    api.read_namespaced_lease = original_read
    assert results == [True, False] and api.holder() == "a"


def test_release_lets_the_other_replica_lead_at_once(clock):  # pylint: disable=unused-argument
    api = FakeLeases()
    first, second = elector(api, "a"), elector(api, "b")
    first.try_acquire_or_renew()
    assert second.try_acquire_or_renew() is False
    first.release()
    assert api.holder() == ""
    assert second.try_acquire_or_renew() is True and api.holder() == "b"
    first.release()  # no longer the holder: changes nothing
    assert api.holder() == "b"
