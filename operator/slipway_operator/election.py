"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Only the replica holding the Lease runs kopf and the reconciler; the other waits. A holder renews
the Lease every ``renew`` s; a candidate takes it over when its record has not changed for
``duration`` s, measured on the candidate's own clock from when it first saw that record (so the
two replicas' clocks never need to agree). Every write carries the resourceVersion it read, so of
two candidates only one can win. A leader that cannot renew within ``deadline`` s stops leading
(the process exits and its Deployment restarts it as a candidate); on a clean stop it releases the
Lease, so the other replica takes over at once.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from dataclasses import dataclass
from typing import Any

LOGGER = logging.getLogger("slipway_operator.election")


class LeadershipLost(RuntimeError):
    """The Lease could not be renewed in time, or another replica holds it now."""


def _now_micro() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class LeaseElector:
    """Acquires and keeps one Lease through the kubernetes client (calls run in a thread)."""

    api: Any  # kubernetes.client.CoordinationV1Api, or a stand-in with its three calls
    namespace: str
    name: str
    identity: str
    duration: int = 15
    deadline: float = 10.0
    retry: float = 2.0
    _observed: tuple | None = None  # (holder, renewTime, resourceVersion) last seen
    _observed_at: float = 0.0
    _renewed_at: float = 0.0

    def _body(self, transitions: int, acquire_time: str | None, version: str | None = None) -> dict:
        now = _now_micro()
        metadata = {"name": self.name, "namespace": self.namespace}
        if version is not None:
            metadata["resourceVersion"] = version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self.duration,
                         "acquireTime": acquire_time or now, "renewTime": now, "leaseTransitions": transitions}}

    def try_acquire_or_renew(self) -> bool:
        """One attempt (blocking): True when this replica holds the Lease afterwards."""
        from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            try:
                self.api.create_namespaced_lease(self.namespace, self._body(0, None))
            except ApiException as create_exc:
                if create_exc.status == 409:
                    return False
                raise
            self._renewed_at = time.monotonic()
            return True
        spec = lease.spec
        holder = spec.holder_identity or ""
        record = (holder, str(spec.renew_time), lease.metadata.resource_version)
        now = time.monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = spec.lease_duration_seconds or self.duration
        expired = now - self._observed_at >= duration
        if holder and holder != self.identity and not expired:
            return False
        transitions = (spec.lease_transitions or 0) + (0 if holder == self.identity else 1)
        acquire_time = spec.acquire_time.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if holder == self.identity and spec.acquire_time else None
        try:
            self.api.replace_namespaced_lease(self.name, self.namespace,
                                              self._body(transitions, acquire_time, lease.metadata.resource_version))
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        if holder != self.identity:
            LOGGER.info("took the Lease %s/%s over from %r", self.namespace, self.name, holder)
        self._renewed_at = time.monotonic()
        return True

    async def acquire(self) -> None:
        """Wait until this replica leads."""
        while True:
            try:
                if await asyncio.to_thread(self.try_acquire_or_renew):
                    LOGGER.info("leading as %s (Lease %s/%s)", self.identity, self.namespace, self.name)
                    return
            except Exception as exc:  # pylint: disable=broad-exception-caught  # keep trying: the API may be restarting
                LOGGER.warning("Lease attempt failed: %s", exc)
            await asyncio.sleep(self.retry)

    async def keep(self) -> None:
        """Renew until the Lease is lost (raises LeadershipLost); runs as long as the leader does."""
        while True:
            await asyncio.sleep(self.retry)
            try:
                held = await asyncio.to_thread(self.try_acquire_or_renew)
            except Exception as exc:  # pylint: disable=broad-exception-caught  # retried until the deadline
                LOGGER.warning("Lease renewal failed: %s", exc)
                held = True  # unknown: keep leading until the deadline below
            if not held:
                raise LeadershipLost(f"another replica holds the Lease {self.namespace}/{self.name}")
            if time.monotonic() - self._renewed_at > self.deadline:
                raise LeadershipLost(f"the Lease {self.namespace}/{self.name} was not renewed for {self.deadline:.0f} s")

    def release(self) -> None:
        """Give the Lease up (blocking) so the other replica need not wait for it to expire."""
        from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
            if lease.spec.holder_identity != self.identity:
                return
            body = self._body(lease.spec.lease_transitions or 0, None, lease.metadata.resource_version)
            body["spec"]["holderIdentity"] = ""
            body["spec"]["leaseDurationSeconds"] = 1
            self.api.replace_namespaced_lease(self.name, self.namespace, body)
        except ApiException as exc:
            LOGGER.warning("could not release the Lease: %s", exc)
