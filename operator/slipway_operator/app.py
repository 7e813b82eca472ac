"""The operator: kopf watches the ClusterConfiguration, one reconciler runs playbooks/kubesphere.yml.

Flow: the replica that holds the Lease (election.py) starts kopf and the reconciler. kopf calls
``on_spec`` when ``.spec`` of ``ks-installer`` changes (create, update, and on start: resume) and
``on_resync`` on a timer; both only trigger the reconciler, whose Debouncer turns a burst into one
run. A run is the collection's own reconcile: ansible-runner runs playbooks/kubesphere.yml on
localhost with the operator's kubeconfig, which plans from ``cluster_configuration_info`` and
writes status with ``component_status``. Afterwards the reconciler reads the statuses, posts one
Event per component that changed, updates the metrics, and when a component failed schedules a
retry with exponential backoff.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from . import logic

LOGGER = logging.getLogger("slipway_operator")
GROUP, VERSION, PLURAL = "installer.kubesphere.io", "v1alpha1", "clusterconfigurations"
SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
COMPONENT = "slipway-operator"


@dataclass
class Options:  # pylint: disable=too-many-instance-attributes
    """Everything the operator is told on its command line (see __main__.py)."""

    kubeconfig: str | None
    namespace: str = "kubesphere-system"
    name: str = "ks-installer"
    collections_path: str = ""
    playbook: str = ""
    extra_vars: dict = field(default_factory=dict)
    port: int = 8080
    debounce: float = 2.0
    max_wait: float = 30.0
    resync: float = 300.0
    backoff_base: float = 10.0
    backoff_max: float = 300.0
    run_timeout: int = 1800
    lease_name: str = "slipway-operator"
    identity: str = ""
    workdir: str = ""


class Metrics:  # pylint: disable=too-few-public-methods
    """The Prometheus metrics, in a registry of their own (served on /metrics)."""

    def __init__(self):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram  # pylint: disable=import-outside-toplevel
        self.registry = CollectorRegistry()
        self.reconciles = Counter("slipway_operator_reconciles", "Reconciles run, by result (success, component_failed, error)",
                                  ["result"], registry=self.registry)
        self.duration = Histogram("slipway_operator_reconcile_duration_seconds", "Wall time of one reconcile",
                                  buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800), registry=self.registry)
        self.components = Gauge("slipway_operator_components", "Components by status after the last reconcile",
                                ["status"], registry=self.registry)
        self.triggers = Counter("slipway_operator_triggers", "Reconcile requests, by source (spec, resync, retry)",
                                ["source"], registry=self.registry)
        self.playbook_runs = Counter("slipway_operator_playbook_runs", "Runs of playbooks/kubesphere.yml (a reconcile whose "
                                     "plan has nothing to do runs none)", registry=self.registry)
        self.leader = Gauge("slipway_operator_leader", "1 while this replica holds the Lease and reconciles",
                            registry=self.registry)
        for result in ("success", "component_failed", "error"):
            self.reconciles.labels(result=result)
        for source in ("spec", "resync", "retry"):
            self.triggers.labels(source=source)
        for status in logic.STATUSES:
            self.components.labels(status=status).set(0)

    def set_components(self, states: dict) -> None:
        for status, count in logic.status_counts(states).items():
            self.components.labels(status=status).set(count)


def in_cluster_kubeconfig(path: Path) -> Path:
    """A kubeconfig for the playbook from the pod's service account, rewritten before each run
    (the kubelet rotates the token). Private: mode 0600, never logged."""
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    token = (SA_DIR / "token").read_text().strip()
    ca_data = base64.b64encode((SA_DIR / "ca.crt").read_bytes()).decode()
    import json  # pylint: disable=import-outside-toplevel
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "in-cluster",
              "clusters": [{"name": "in-cluster", "cluster": {"server": server, "certificate-authority-data": ca_data}}],
              "users": [{"name": "operator", "user": {"token": token}}],
              "contexts": [{"name": "in-cluster", "context": {"cluster": "in-cluster", "user": "operator"}}]}
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(config, handle)
    return path


class Reconciler:
    """The one reconcile loop of the leading replica."""

    def __init__(self, options: Options, metrics: Metrics, catalogue, api_client, planner=None):  # pylint: disable=too-many-arguments
        self.options = options
        self.planner = planner
        self.metrics = metrics
        self.catalogue = catalogue
        self.api_client = api_client
        self.debouncer = logic.Debouncer(quiet=options.debounce, max_wait=options.max_wait)
        self.wakeup = asyncio.Event()
        self.attempt = 0
        self.retry_at: float | None = None
        self.workdir = Path(options.workdir or tempfile.mkdtemp(prefix="slipway-operator-"))
        (self.workdir / "runner").mkdir(parents=True, exist_ok=True)

    def trigger(self, source: str) -> None:
        self.metrics.triggers.labels(source=source).inc()
        self.debouncer.trigger(source, time.monotonic())
        self.wakeup.set()

    def _next_wake(self) -> float | None:
        times = [t for t in (self.debouncer.deadline(), self.retry_at) if t is not None]
        return min(times) if times else None

    async def run(self) -> None:
        while True:
            wake = self._next_wake()
            timeout = None if wake is None else max(0.0, wake - time.monotonic())
            self.wakeup.clear()
            try:
                await asyncio.wait_for(self.wakeup.wait(), timeout=timeout)
                continue  # a new trigger: recompute when to wake
            except asyncio.TimeoutError:
                pass
            now = time.monotonic()
            if self.retry_at is not None and now >= self.retry_at:
                self.retry_at = None
                self.trigger("retry")
                continue
            if self.debouncer.due(now):
                sources = self.debouncer.take()
                self.schedule_retry(await self.reconcile(sources))

    # --- one reconcile -----------------------------------------------------------------------

    def _read(self) -> dict | None:
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
        try:
            return cast("dict", client.CustomObjectsApi(self.api_client).get_namespaced_custom_object(
                GROUP, VERSION, self.options.namespace, PLURAL, self.options.name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def _kubeconfig(self) -> str:
        if self.options.kubeconfig:
            return self.options.kubeconfig
        return str(in_cluster_kubeconfig(self.workdir / "kubeconfig"))

    def _playbook(self, sources: list[str]):
        import ansible_runner  # pylint: disable=import-outside-toplevel
        extravars = logic.playbook_vars(sources, self._kubeconfig(), self.options.extra_vars)
        # Ansible's temporary files in the work directory: the image's user has no home directory.
        env = {"ANSIBLE_COLLECTIONS_PATH": self.options.collections_path, "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_REMOTE_TMP": str(self.workdir / "ansible-tmp"), "ANSIBLE_LOCAL_TEMP": str(self.workdir / "ansible-local"),
               "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_LOCALHOST_WARNING": "0",
               "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0", "ANSIBLE_CONFIG": logic.ansible_config(self.workdir)}
        return ansible_runner.run(
            private_data_dir=str(self.workdir / "runner"), playbook=self.options.playbook,
            inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
            extravars=extravars, envvars=env, quiet=True, rotate_artifacts=2, timeout=self.options.run_timeout)

    @staticmethod
    def _failure(runner) -> str:
        """The first failed task and its message, for the ReconcileFailed Event."""
        for event in runner.events:
            if event.get("event") == "runner_on_failed" and not event.get("event_data", {}).get("ignore_errors"):
                data = event["event_data"]
                message = str(data.get("res", {}).get("msg", ""))[:500]
                return f"{data.get('task', 'a task')}: {message}"
        try:
            tail = " ".join(runner.stdout.read().strip().splitlines()[-3:])[-500:]
        except (OSError, AttributeError):
            tail = ""
        return f"ansible-playbook ended {runner.status} (rc {runner.rc}): {tail}"

    def post_event(self, obj: dict, event_type: str, reason: str, message: str) -> None:
        """One core/v1 Event on the ClusterConfiguration (kubectl describe cc ks-installer shows it)."""
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        now = datetime.datetime.now(datetime.timezone.utc)
        meta = obj["metadata"]
        # The client takes the Event as a plain dict (it serializes dicts as they are).
        body: Any
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": meta["name"] + ".", "namespace": meta["namespace"]},
                "involvedObject": {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterConfiguration",
                                   "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
                                   "resourceVersion": meta["resourceVersion"]},
                "type": event_type, "reason": reason, "message": message[:1000],
                "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
                "reportingInstance": self.options.identity, "firstTimestamp": now.isoformat(),
                "lastTimestamp": now.isoformat(), "count": 1}
        try:
            client.CoreV1Api(self.api_client).create_namespaced_event(meta["namespace"], body)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # an Event is worth no failed reconcile
            LOGGER.warning("could not post the Event %s: %s", reason, exc)

    async def reconcile(self, sources: list[str]) -> str:
        """Run the playbook once; the result: success, component_failed or error."""
        LOGGER.info("reconciling (%s)", ", ".join(sources))
        started = time.monotonic()
        before_obj = await asyncio.to_thread(self._read)
        before = logic.component_states((before_obj or {}).get("status"), self.catalogue)
        actions = logic.pending_actions(before_obj, self.planner) if self.planner is not None else None
        if actions is not None and not logic.needs_playbook(sources, actions):
            # The collection's own plan (the playbook's cluster_configuration_info) has nothing to
            # install, reapply or remove: the playbook would change nothing.
            self.metrics.set_components(before)
            self.metrics.reconciles.labels(result="success").inc()
            self.metrics.duration.observe(time.monotonic() - started)
            LOGGER.info("reconcile success in %.1f s (nothing to do)", time.monotonic() - started)
            return "success"
        try:
            self.metrics.playbook_runs.inc()
            runner = await asyncio.to_thread(self._playbook, sources)
            ok = runner.status == "successful" and runner.rc == 0
            failure = None if ok else self._failure(runner)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # recorded, retried
            failure = f"the playbook could not run: {exc}"
        after_obj = await asyncio.to_thread(self._read)
        after = logic.component_states((after_obj or {}).get("status"), self.catalogue)
        if after_obj is not None:
            for change in logic.transitions(before, after):
                await asyncio.to_thread(self.post_event, after_obj, change.type, change.reason, change.message)
            if failure:
                await asyncio.to_thread(self.post_event, after_obj, "Warning", logic.REASON_RECONCILE_FAILED, failure)
        self.metrics.set_components(after)
        failed = logic.failed_components(after)
        result = "error" if failure else ("component_failed" if failed else "success")
        self.metrics.reconciles.labels(result=result).inc()
        self.metrics.duration.observe(time.monotonic() - started)
        LOGGER.info("reconcile %s in %.1f s%s", result, time.monotonic() - started,
                    f" ({failure or ', '.join(failed)})" if result != "success" else "")
        return result

    def schedule_retry(self, result: str) -> None:
        """After a reconcile: forget the retries on success, else retry with exponential backoff."""
        if result == "success":
            self.attempt, self.retry_at = 0, None
            return
        self.attempt += 1
        delay = logic.backoff_delay(self.attempt, self.options.backoff_base, self.options.backoff_max)
        self.retry_at = time.monotonic() + delay
        LOGGER.warning("retry %d in %.0f s", self.attempt, delay)
