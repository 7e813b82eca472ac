"""The fleet controller: each SlipwayCluster brought to its spec, one operation (a Job) at a time.

kopf only watches (SlipwayClusters, SlipwayOperations, and the Jobs and pods this controller made) and puts
the cluster concerned in a queue; one loop reconciles the queued clusters, each reconcile reading the state
from the API (nothing is remembered that a restart would lose):

1. An operation in progress (status.lastOperation): its Job and pods are read into the SlipwayOperation's
   status (phase, runs, recap per host, failed task, last lines). While it runs, nothing else starts for the
   cluster: later edits wait, and the next plan takes them all at once (coalesced). When it ends, the cluster's
   status records it (appliedSpec on success), with an Event and the metrics.
2. Otherwise: the finalizer, then the collection's model over the spec (PreflightPassed, every problem in the
   condition and one Event, no Job), then spec.plan(): the next operation, started when fewer than
   ``max_parallel`` operations run in the whole management cluster (else the cluster waits its turn).
3. An operation starts as a SlipwayOperation, a ConfigMap with the inventory and variables, the runner's
   ServiceAccount and Role, and a Job (jobs.py). A pod that dies is run again by the Job (backoffLimit);
   a failed task fails the Job at once (podFailurePolicy).
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from slipway_operator import collection

from . import jobs
from . import kubeconfig as target_kubeconfig
from . import spec as fleet
from . import tenancy

LOGGER = logging.getLogger("slipway_fleet")
COMPONENT = "slipway-fleet"
# What an administrator installs so that adopting hosts needs the right `adopt` (operator/admission/): the
# controller honours the adopt annotation only while this binding is there.
ADOPT_POLICY_BINDING = "slipway-fleet-adopt"
PHASE_OF = {"create": "Provisioning", "converge": "Provisioning", "scale": "Scaling", "remove-node": "Scaling",
            "upgrade": "Upgrading", "reset": "Deleting", "renew-certs": "Running", "etcd-backup": "Running"}
IMPERATIVE = ("renew-certs", "etcd-backup")
PHASES = ("Pending", "Provisioning", "Running", "Scaling", "Upgrading", "Deleting", "Failed")


@dataclass
class Options:  # pylint: disable=too-many-instance-attributes
    """The controller's command line (__main__.py)."""

    kubeconfig: str | None
    jobs: jobs.JobSettings
    collections_path: str
    namespaces: list[str] = field(default_factory=list)
    max_parallel: int = 5
    # Operations of one namespace (one tenant) at once: one tenant cannot hold every slot.
    max_parallel_per_namespace: int = 2
    resync: float = 60.0
    port: int = 8080
    lease_namespace: str = "slipway-fleet"
    lease_name: str = "slipway-fleet"
    identity: str = ""
    target_timeout: float = 5.0


class Metrics:  # pylint: disable=too-few-public-methods
    """Prometheus metrics in a registry of their own (/metrics), named like slipway-operator's."""

    def __init__(self):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram  # pylint: disable=import-outside-toplevel
        self.registry = CollectorRegistry()
        self.operations = Counter("slipway_fleet_operations", "Operations ended, by type and result (succeeded, failed)",
                                  ["type", "result"], registry=self.registry)
        self.duration = Histogram("slipway_fleet_operation_duration_seconds", "Wall time of an operation, start to end",
                                  ["type"], buckets=(30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400),
                                  registry=self.registry)
        self.clusters = Gauge("slipway_fleet_clusters", "SlipwayClusters by phase", ["phase"], registry=self.registry)
        self.running = Gauge("slipway_fleet_operations_running", "Operations started and not ended", registry=self.registry)
        self.waiting = Gauge("slipway_fleet_clusters_waiting", "Clusters with an operation to start, waiting for a slot "
                             "(max_parallel)", registry=self.registry)
        self.preflight_failures = Counter("slipway_fleet_preflight_failures", "Specs refused by the model or the plan "
                                          "before any Job", registry=self.registry)
        self.reruns = Counter("slipway_fleet_playbook_reruns", "Runs of a playbook again after its pod ended unfinished",
                              registry=self.registry)
        self.leader = Gauge("slipway_fleet_leader", "1 while this replica holds the Lease and reconciles",
                            registry=self.registry)
        for phase in PHASES:
            self.clusters.labels(phase=phase).set(0)


def _parse_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return None


class Controller:  # pylint: disable=too-many-instance-attributes
    """The reconcile loop and the API calls it makes (run in threads: the kubernetes client blocks)."""

    def __init__(self, options: Options, metrics: Metrics, api_client, model_module=None, bundle=None):
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        self.options = options
        self.metrics = metrics
        self.api_client = api_client
        # Custom objects come back as plain dicts (the client types them object).
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.rbac = client.RbacAuthorizationV1Api(api_client)
        self.model = model_module or collection.model(options.collections_path)
        # The model reads the fleet's own bundle only, and no file or server a tenant names.
        self.bundle = tenancy.FleetBundle(bundle if bundle is not None else fleet.bundle_reader(options.collections_path),
                                          options.jobs.bundle_mount)
        self._adopt_guard: tuple[float, bool] = (0.0, False)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.queued: set[tuple[str, str]] = set()
        self.waiting: set[tuple[str, str]] = set()
        self.observing: set[tuple[str, str]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._preflight_cache: dict[tuple[str, int], fleet.Preflight] = {}
        self._last_event: dict[tuple[str, str], tuple[str, str]] = {}

    # --- the queue ---------------------------------------------------------------------------------------

    def trigger(self, namespace: str, name: str, observe: bool = False) -> None:
        """Queue a reconcile of the cluster; safe from the reconcile's thread as from the event loop."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._enqueue, namespace, name, observe)
        else:
            self._enqueue(namespace, name, observe)

    def _enqueue(self, namespace: str, name: str, observe: bool) -> None:
        key = (namespace, name)
        if observe:
            self.observing.add(key)
        if key not in self.queued:
            self.queued.add(key)
            self.queue.put_nowait(key)

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        while True:
            key = await self.queue.get()
            self.queued.discard(key)
            observe = key in self.observing
            self.observing.discard(key)
            namespace, name = key
            try:
                await asyncio.to_thread(self.reconcile, namespace, name, observe)
            except Exception as exc:  # pylint: disable=broad-exception-caught  # logged; the resync tries again
                LOGGER.exception("reconcile of %s/%s failed: %s", key[0], key[1], exc)

    async def resync(self) -> None:
        """Every cluster again, on a timer: progress of Jobs whose events were missed, the target's nodes, metrics."""
        while True:
            try:
                for obj in await asyncio.to_thread(self.list_clusters):
                    self.trigger(obj["metadata"]["namespace"], obj["metadata"]["name"], observe=True)
                await asyncio.to_thread(self.count_phases)
            except Exception as exc:  # pylint: disable=broad-exception-caught
                LOGGER.warning("resync failed: %s", exc)
            await asyncio.sleep(self.options.resync)

    # --- API helpers ---------------------------------------------------------------------------------------

    def _get(self, call, *args):
        from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
        try:
            return call(*args)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def get_cluster(self, namespace: str, name: str) -> dict | None:
        return self._get(self.custom.get_namespaced_custom_object, fleet.GROUP, fleet.VERSION, namespace, fleet.CLUSTERS, name)

    def get_operation(self, namespace: str, name: str) -> dict | None:
        return self._get(self.custom.get_namespaced_custom_object, fleet.GROUP, fleet.VERSION, namespace, fleet.OPERATIONS, name)

    def list_clusters(self) -> list[dict]:
        if self.options.namespaces:
            return [item for ns in self.options.namespaces for item in self.custom.list_namespaced_custom_object(
                fleet.GROUP, fleet.VERSION, ns, fleet.CLUSTERS)["items"]]
        return self.custom.list_cluster_custom_object(fleet.GROUP, fleet.VERSION, fleet.CLUSTERS)["items"]

    def list_operations(self, namespace: str | None = None, cluster: str | None = None) -> list[dict]:
        selector = f"{jobs.LABEL_CLUSTER}={cluster}" if cluster else ""
        if namespace:
            return self.custom.list_namespaced_custom_object(fleet.GROUP, fleet.VERSION, namespace, fleet.OPERATIONS,
                                                             label_selector=selector)["items"]
        if self.options.namespaces:
            return [item for ns in self.options.namespaces for item in self.custom.list_namespaced_custom_object(
                fleet.GROUP, fleet.VERSION, ns, fleet.OPERATIONS)["items"]]
        return self.custom.list_cluster_custom_object(fleet.GROUP, fleet.VERSION, fleet.OPERATIONS)["items"]

    def every_cluster(self) -> list[dict]:
        """The SlipwayClusters of every namespace, watched or not: a host belongs to one of them (tenancy.conflicts)."""
        return self.custom.list_cluster_custom_object(fleet.GROUP, fleet.VERSION, fleet.CLUSTERS)["items"]

    def running_operations(self, namespace: str | None = None) -> int:
        """Operations in progress (of one namespace, or all): counted from the clusters (status.lastOperation), the
        record the controller writes last when it starts one, so an operation left half-started holds no slot."""
        return sum(1 for obj in self.list_clusters()
                   if ((obj.get("status") or {}).get("lastOperation") or {}).get("phase") in jobs.ACTIVE_PHASES
                   and namespace in (None, obj["metadata"]["namespace"]))

    def adoption_guarded(self) -> bool:
        """Whether the API server itself checks the right to adopt (the policy binding exists); read once a minute."""
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        read_at, guarded = self._adopt_guard
        if time.monotonic() - read_at > 60 or not guarded:
            api = client.AdmissionregistrationV1Api(self.api_client)
            guarded = self._get(api.read_validating_admission_policy_binding, ADOPT_POLICY_BINDING) is not None
            self._adopt_guard = (time.monotonic(), guarded)
        return guarded

    def namespace_ranges(self, namespace: str) -> list | None:
        """The address ranges an administrator allowed the namespace (its annotation), None for no limit."""
        obj = self._get(self.core.read_namespace, namespace)
        return tenancy.ranges(self.api_client.sanitize_for_serialization(obj) if obj is not None else None)

    def tenancy_problems(self, obj: dict) -> list[str]:
        """What the spec may not claim: hosts of another cluster, addresses outside the namespace's ranges."""
        return (tenancy.conflicts(obj, self.every_cluster())
                + tenancy.range_problems(obj["spec"], obj["metadata"]["namespace"],
                                         self.namespace_ranges(obj["metadata"]["namespace"])))

    def patch_cluster_status(self, obj: dict, status: dict) -> None:
        old = obj.get("status") or {}
        if status == old:
            return
        body = {"status": {**{key: None for key in old if key not in status}, **status}}
        updated = self.custom.patch_namespaced_custom_object_status(fleet.GROUP, fleet.VERSION, obj["metadata"]["namespace"],
                                                                    fleet.CLUSTERS, obj["metadata"]["name"], body)
        # A later patch of the same object (the finalizer) is made against this version.
        obj["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]

    def patch_operation_status(self, op: dict, status: dict) -> None:
        if (op.get("status") or {}) == status:
            return
        self.custom.patch_namespaced_custom_object_status(fleet.GROUP, fleet.VERSION, op["metadata"]["namespace"],
                                                          fleet.OPERATIONS, op["metadata"]["name"], {"status": status})

    def set_finalizers(self, obj: dict, finalizers: list[str]) -> None:
        self.custom.patch_namespaced_custom_object(
            fleet.GROUP, fleet.VERSION, obj["metadata"]["namespace"], fleet.CLUSTERS, obj["metadata"]["name"],
            {"metadata": {"finalizers": finalizers, "resourceVersion": obj["metadata"]["resourceVersion"]}})

    def post_event(self, obj: dict, event_type: str, reason: str, message: str, once: bool = False) -> None:
        """One core/v1 Event on the object (kubectl describe shows it); ``once``: not again while it stays the same."""
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        meta = obj["metadata"]
        key = (meta["uid"], reason if once else f"{reason}-{time.monotonic()}")
        if once and self._last_event.get(key) == (reason, message):
            return
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        # The client takes the Event as a plain dict (it serializes dicts as they are).
        body: Any
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": meta["name"] + ".", "namespace": meta["namespace"]},
                "involvedObject": {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"],
                                   "namespace": meta["namespace"], "uid": meta["uid"],
                                   "resourceVersion": meta.get("resourceVersion")},
                "type": event_type, "reason": reason, "message": message[:1000],
                "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
                "reportingInstance": self.options.identity, "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        try:
            client.CoreV1Api(self.api_client).create_namespaced_event(meta["namespace"], body)
            if once:
                self._last_event[key] = (reason, message)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # an Event is worth no failed reconcile
            LOGGER.warning("could not post the Event %s: %s", reason, exc)

    def _create(self, create, namespace: str, body: dict) -> None:
        """Create, or keep what is there (the same operation's object, made before a restart)."""
        from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
        try:
            create(namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def _apply(self, create, replace, read, namespace: str, body: dict) -> None:
        """Create, or replace what is there (keeping its resourceVersion)."""
        from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
        try:
            create(namespace, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = read(body["metadata"]["name"], namespace)
            body = copy.deepcopy(body)
            body["metadata"]["resourceVersion"] = current.metadata.resource_version
            replace(body["metadata"]["name"], namespace, body)

    # --- the reconcile -------------------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str, observe: bool = False) -> None:  # pylint: disable=too-many-return-statements
        obj = self.get_cluster(namespace, name)
        if obj is None:
            self.waiting.discard((namespace, name))
            return
        meta = obj["metadata"]
        status = copy.deepcopy(obj.get("status") or {})
        deleting = bool(meta.get("deletionTimestamp"))
        finalizers = list(meta.get("finalizers") or [])
        if not deleting and jobs.FINALIZER not in finalizers:
            self.set_finalizers(obj, finalizers + [jobs.FINALIZER])
            return  # the patch is an event: the next reconcile goes on from there

        last = status.get("lastOperation") or {}
        if last.get("phase") in jobs.ACTIVE_PHASES:
            if not self.follow(obj, status, last, observe):
                return
            obj = self.get_cluster(namespace, name)
            if obj is None:
                return
            status = copy.deepcopy(obj.get("status") or {})
            last = status.get("lastOperation") or {}
        failed = self.get_operation(namespace, last["name"]) if last.get("phase") == "Failed" else None
        if failed is not None and int(failed["spec"].get("generation") or 0) >= int(meta.get("generation") or 0) \
                and (not deleting or failed["spec"]["type"] == "reset"):
            # The same spec would fail the same way: an edit of the spec, or deleting the failed
            # SlipwayOperation, starts again.
            self.observe(obj, status, observe)
            self.patch_cluster_status(obj, status)
            return
        self.next_operation(obj, status, deleting, observe)

    def follow(self, obj: dict, status: dict, last: dict, observe: bool = False) -> bool:
        """Update the operation in progress from its Job; True once it has ended (the cluster may go on)."""
        namespace = obj["metadata"]["namespace"]
        op = self.get_operation(namespace, last["name"])
        if op is None:
            state = jobs.JobState("Failed", message=f"the SlipwayOperation {last['name']} was deleted while it ran")
            op_status: dict[str, Any] = {"phase": "Failed", "message": state.message}
        else:
            job_obj = self._get(self.batch.read_namespaced_job, last["name"], namespace)
            job_dict = self.api_client.sanitize_for_serialization(job_obj) if job_obj is not None else None
            pods = self.core.list_namespaced_pod(namespace, label_selector=f"{jobs.LABEL_OPERATION}={last['name']}").items
            pod_dicts = [self.api_client.sanitize_for_serialization(pod) for pod in pods]
            state = jobs.job_state(job_dict, pod_dicts)
            previous = op.get("status") or {}
            op_status = jobs.operation_status(state, last["name"], previous.get("startTime"))
            op_status["completionTime"] = previous.get("completionTime") or op_status.get("completionTime")
            if not op_status["completionTime"]:
                op_status.pop("completionTime")
            # Reruns only grow: a read between the Job's counts (a killed pod gone, not counted yet) must not lower
            # them, or the next read would count and announce the same rerun again.
            known = int(previous.get("reruns") or 0)
            reruns = max(state.retried, known)
            if reruns > known:
                self.metrics.reruns.inc(reruns - known)
                self.post_event(obj, "Warning", "PlaybookRerun",
                                f"{last['name']}: the pod of run {reruns} ended before the playbook did; "
                                f"running playbooks/{fleet.PLAYBOOKS[op['spec']['type']]} again (it converges)")
            op_status["reruns"] = reruns
            if previous.get("hostKeys"):
                op_status["hostKeys"] = previous["hostKeys"]  # the runner's report of the hosts it met first
            self.patch_operation_status(op, op_status)
        if state.phase in jobs.ACTIVE_PHASES:
            new = dict(status, lastOperation={**last, "phase": state.phase})
            self.observe(obj, new, observe)
            self.patch_cluster_status(obj, new)
            return False
        self.finish(obj, status, last, op, state, op_status)
        return True

    def finish(self, obj: dict, status: dict, last: dict, op: dict | None, state: jobs.JobState, op_status: dict) -> None:
        """The cluster's status after its operation ended."""
        op_type = last.get("type", "")
        generation = int(obj["metadata"].get("generation") or 0)
        succeeded = state.phase == "Succeeded"
        self.metrics.operations.labels(type=op_type, result="succeeded" if succeeded else "failed").inc()
        self.metrics.running.dec()
        started, ended = _parse_time(op_status.get("startTime")), _parse_time(op_status.get("completionTime"))
        if started is not None and ended is not None:
            self.metrics.duration.labels(type=op_type).observe(max(0.0, ended - started))
        status["lastOperation"] = {**last, "phase": state.phase}
        if succeeded:
            target = json.loads(last.get("target") or "null")
            if target is not None:
                status["appliedSpec"] = {"json": json.dumps(target, sort_keys=True)}
                status["appliedGeneration"] = int((op or {}).get("spec", {}).get("generation") or generation)
                status["kubernetesVersion"] = target.get("kubernetesVersion", "")
            status["conditions"] = jobs.set_condition(status.get("conditions"), "OperationSucceeded", True, "Succeeded",
                                                      f"{last['name']} ({op_type}) succeeded", generation)
            secret = f"{obj['metadata']['name']}-kubeconfig"
            if op_type != "reset" and self._get(self.core.read_namespaced_secret, secret, obj["metadata"]["namespace"]):
                status["kubeconfigSecret"] = secret
            self.post_event(obj, "Normal", "OperationSucceeded", f"{last['name']}: {op_type} succeeded")
        else:
            where = f" on {op_status['failedHost']}" if op_status.get("failedHost") else ""
            task = f" in task '{op_status['failedTask']}'" if op_status.get("failedTask") else ""
            message = f"{last['name']} ({op_type}) failed{where}{task}: {op_status.get('message') or state.message}"
            status["conditions"] = jobs.set_condition(status.get("conditions"), "OperationSucceeded", False, "Failed",
                                                      message, generation)
            status["phase"] = "Failed"
            self.post_event(obj, "Warning", "OperationFailed", message)
        # Keys of hosts met first (trust on first use) are the hosts' from now on, whatever the operation's end; the
        # keys of hosts no longer in the spec or the applied spec go (a host removed and added back is met anew).
        status["hostKeys"] = tenancy.record_host_keys(obj, status, ((op or {}).get("status") or {}).get("hostKeys"))
        if not status["hostKeys"]:
            status.pop("hostKeys")
        self.patch_cluster_status(obj, status)
        for key in list(self.waiting):
            self.trigger(*key)  # a slot is free

    def preflight(self, obj: dict) -> fleet.Preflight:
        key = (obj["metadata"]["uid"], int(obj["metadata"].get("generation") or 0))
        if key not in self._preflight_cache:
            self._preflight_cache[key] = fleet.preflight(obj["spec"], obj["metadata"]["name"], self.model, bundle=self.bundle,
                                                         bundle_mount=self.options.jobs.bundle_mount)
        return self._preflight_cache[key]

    def next_operation(self, obj: dict, status: dict, deleting: bool, observe: bool = False) -> None:  # pylint: disable=too-many-branches,too-many-statements
        meta = obj["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        generation = int(meta.get("generation") or 0)
        applied = json.loads((status.get("appliedSpec") or {}).get("json") or "null")
        adopt = str((meta.get("annotations") or {}).get(fleet.ADOPT_ANNOTATION, "")).lower() == "true"
        status["observedGeneration"] = generation
        status.setdefault("phase", "Pending")

        pending_user = sorted((op for op in self.list_operations(namespace, None)
                               if op["spec"].get("cluster") == name and op["spec"]["type"] in IMPERATIVE
                               and not (op.get("status") or {}).get("phase")),
                              key=lambda op: op["metadata"].get("creationTimestamp") or "")
        result = self.preflight(obj)
        # What the spec claims is checked at every plan (other clusters change), before the model's verdict is used.
        claimed = [] if deleting else self.tenancy_problems(obj)
        if claimed:
            result = fleet.Preflight(claimed + result.problems, result.warnings)
        if not result.passed and not deleting:
            self.metrics.preflight_failures.inc()
            status["conditions"] = jobs.set_condition(status.get("conditions"), "PreflightPassed", False,
                                                      "TenancyRefused" if claimed else "ModelRefused",
                                                      result.message(), generation)
            if not status.get("created"):
                status["phase"] = "Failed"
            self.post_event(obj, "Warning", "PreflightFailed", result.message(), once=True)
            self.observe(obj, status, observe)
            self.patch_cluster_status(obj, status)
            return
        reset_done = deleting and (status.get("lastOperation") or {}).get("type") == "reset" \
            and (status.get("lastOperation") or {}).get("phase") == "Succeeded"
        step = fleet.plan(obj["spec"], applied, deleting=deleting, adopt=adopt,
                          created=bool(status.get("created"))) if not reset_done else fleet.Plan(type=None)
        if step.refused:
            self.metrics.preflight_failures.inc()
            status["conditions"] = jobs.set_condition(status.get("conditions"), "PreflightPassed", False, "PlanRefused",
                                                      step.refused, generation)
            self.post_event(obj, "Warning", "SpecRefused", step.refused, once=True)
            self.observe(obj, status, observe)
            self.patch_cluster_status(obj, status)
            return
        if not deleting:
            status["conditions"] = jobs.set_condition(status.get("conditions"), "PreflightPassed", True, "Passed",
                                                      result.message(), generation)
            if result.model:
                # Where users reach the API server: the model's own answer (the first control plane, the VIP, the LB).
                status["endpoint"] = result.model["endpoint"]["external_url"]
        op_type, hosts, target, run_spec = step.type, step.hosts, step.target, step.run_spec
        if op_type is None and pending_user and applied is not None and not deleting:
            op_type, hosts, target, run_spec = pending_user[0]["spec"]["type"], [], applied, applied
            if op_type == "etcd-backup" and not jobs.has_backup_volume(self.options.jobs):
                # A snapshot in the pod's scratch space would be gone with the pod: refused before any Job.
                message = ("the fleet controller has no backup volume (--backup-claim; the fleet role's "
                           "fleet_backup_host_path or fleet_backup_claim): the snapshot would be lost with the "
                           "Job's pod. Set one, then create the SlipwayOperation again")
                self.patch_operation_status(pending_user[0], {"phase": "Failed", "message": message,
                                                              "startTime": jobs.now(), "completionTime": jobs.now()})
                self.post_event(obj, "Warning", "OperationFailed", f"{pending_user[0]['metadata']['name']}: {message}")
                self.trigger(namespace, name)
                self.patch_cluster_status(obj, status)
                return
        if op_type is None:
            if deleting:
                self.patch_cluster_status(obj, status)
                finalizers = [f for f in meta.get("finalizers") or [] if f != jobs.FINALIZER]
                self.set_finalizers(obj, finalizers)
                return
            if applied is not None:
                status["phase"] = "Running"
            self.observe(obj, status, observe)
            self.patch_cluster_status(obj, status)
            return
        if op_type == "adopt" and not self.adoption_guarded():
            message = (f"metadata.annotations[{fleet.ADOPT_ANNOTATION}]: adoption records hosts as this cluster's without "
                       f"touching them, and the API server does not check who may do that here (no "
                       f"ValidatingAdmissionPolicyBinding {ADOPT_POLICY_BINDING}): an administrator applies "
                       "operator/admission/fleet.slipway.io.yml and grants the verb adopt (docs/fleet.md); nothing was run")
            status["conditions"] = jobs.set_condition(status.get("conditions"), "PreflightPassed", False, "AdoptionNotGuarded",
                                                      message, generation)
            self.post_event(obj, "Warning", "SpecRefused", message, once=True)
            self.patch_cluster_status(obj, status)
            return
        if op_type == "adopt":
            assert target is not None  # an adoption records the spec the hosts run
            status.update(phase="Running", created=True, appliedSpec={"json": json.dumps(target, sort_keys=True)},
                          appliedGeneration=generation, kubernetesVersion=target["kubernetesVersion"])
            self.post_event(obj, "Normal", "Adopted", "the hosts run this spec already (site.yml): recorded, nothing run")
            self.observe(obj, status, observe)
            self.patch_cluster_status(obj, status)
            return
        busy = self.running_operations() >= self.options.max_parallel
        if busy or self.running_operations(namespace) >= self.options.max_parallel_per_namespace:
            self.waiting.add((namespace, name))
            self.metrics.waiting.set(len(self.waiting))
            self.post_event(obj, "Normal", "WaitingForSlot", (
                f"{op_type} waits: {self.options.max_parallel} operations run already in the management cluster "
                "(max_parallel)") if busy else (
                f"{op_type} waits: {self.options.max_parallel_per_namespace} operations of the namespace {namespace} "
                "run already (max_parallel_per_namespace)"), once=True)
            self.patch_cluster_status(obj, status)
            return
        self.waiting.discard((namespace, name))
        self.metrics.waiting.set(len(self.waiting))
        user_op = pending_user[0] if op_type in IMPERATIVE else None
        assert run_spec is not None  # a step that runs a playbook has the spec it runs
        op_name = self.start(obj, op_type, hosts, run_spec, step.kubernetes_version, user_op, status)
        # The spec the hosts will match once it succeeded: in the cluster's status, which only the controller writes.
        last_op = {"name": op_name, "type": op_type, "phase": "Pending"}
        if target is not None:
            last_op["target"] = json.dumps(target, sort_keys=True)
        status.update(phase=PHASE_OF[op_type], created=True, lastOperation=last_op)
        self.patch_cluster_status(obj, status)

    def start(self, obj: dict, op_type: str, hosts: list[str], run_spec: dict,  # pylint: disable=too-many-arguments
              version: str, user_op: dict | None, status: dict) -> str:
        """The operation's record, inputs, runner RBAC, network policy and Job; its name."""
        meta = obj["metadata"]
        namespace = meta["namespace"]
        generation = int(meta.get("generation") or 0)
        if user_op is None:
            existing = {op["metadata"]["name"] for op in self.list_operations(namespace, meta["name"])}
            salt, op_name = 0, ""
            while not op_name or op_name in existing:
                op_name = jobs.operation_name(meta["name"], op_type, generation, f"{meta['uid']}/{salt}")
                salt += 1
            body = jobs.operation(obj, op_type, hosts, generation, op_name, version)
            op = self.custom.create_namespaced_custom_object(fleet.GROUP, fleet.VERSION, namespace, fleet.OPERATIONS, body)
        else:
            op = user_op
            op_name = op["metadata"]["name"]
        variables = fleet.operation_vars(op_type, hosts, run_spec, meta["name"])
        if op_type == "etcd-backup":
            variables["etcd_backup_dir"] = jobs.BACKUP_SNAPSHOTS
        self._create(self.core.create_namespaced_config_map, namespace, jobs.input_config_map(
            op, obj, run_spec, variables, host_keys=tenancy.known_host_keys(run_spec, status),
            endpoint=status.get("endpoint") or ""))
        account, role, binding = jobs.runner_rbac(obj, op_name)
        self._create(self.core.create_namespaced_service_account, namespace, account)
        self._apply(self.rbac.create_namespaced_role, self.rbac.replace_namespaced_role, self.rbac.read_namespaced_role,
                    namespace, role)
        self._create(self.rbac.create_namespaced_role_binding, namespace, binding)
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        network = client.NetworkingV1Api(self.api_client)
        self._apply(network.create_namespaced_network_policy, network.replace_namespaced_network_policy,
                    network.read_namespaced_network_policy, namespace,
                    jobs.network_policy(obj, run_spec, tenancy.api_ports(run_spec)))
        self._create(self.batch.create_namespaced_job, namespace, jobs.job(op, obj, self.options.jobs))
        self.patch_operation_status(op, {"phase": "Pending", "job": op_name, "attempts": 0, "startTime": jobs.now(),
                                         "playbook": fleet.PLAYBOOKS[op_type]})
        self.metrics.running.inc()
        self.post_event(obj, "Normal", "OperationStarted",
                        f"{op_name}: {op_type}{' of ' + ', '.join(hosts) if hosts and op_type in ('scale', 'remove-node') else ''}"
                        f" with playbooks/{fleet.PLAYBOOKS[op_type]} in Job {op_name}")
        LOGGER.info("%s/%s: %s started (%s)", namespace, meta["name"], op_type, op_name)
        return op_name

    # --- the target cluster's nodes ------------------------------------------------------------------------

    def observe(self, obj: dict, status: dict, observe: bool) -> None:
        """The target's nodes on the resync only: a reconcile after each event would ask the target each time."""
        if observe:
            self.observe_target(obj, status)
        else:
            for kind in ("nodes", "nodesReady"):
                if kind in (obj.get("status") or {}):
                    status[kind] = obj["status"][kind]

    def observe_target(self, obj: dict, status: dict) -> None:
        """Nodes, their versions and Ready, read from the created cluster with <name>-kubeconfig (when it answers).
        The Secret is the tenant's: held to kubeconfig.py's strict form, and its server must be the cluster's own
        endpoint; the client is built from its values, never by the kubeconfig loader (no exec plugin, no file,
        no proxy, never the controller's own token)."""
        from kubernetes import client  # pylint: disable=import-outside-toplevel
        meta = obj["metadata"]
        generation = int(meta.get("generation") or 0)
        applied = fleet.applied_spec({"status": status})
        if applied is None or not status.get("endpoint"):
            return
        name = f"{meta['name']}-kubeconfig"
        secret = self._get(self.core.read_namespaced_secret, name, meta["namespace"])
        if secret is None or not (secret.data or {}).get(jobs.KUBECONFIG_KEY):
            return
        import base64  # pylint: disable=import-outside-toplevel
        try:
            credentials = target_kubeconfig.parse(base64.b64decode(secret.data[jobs.KUBECONFIG_KEY]), status["endpoint"])
        except (target_kubeconfig.KubeconfigRefused, ValueError) as exc:
            message = (f"{name}: {exc}; the controller reads only the strict form (docs/fleet.md, \"The created "
                       "cluster's kubeconfig\"): nothing of it was used")
            status["conditions"] = jobs.set_condition(status.get("conditions"), "Ready", False, "KubeconfigRefused",
                                                      message, generation)
            self.post_event(obj, "Warning", "KubeconfigRefused", message, once=True)
            return
        try:
            with target_kubeconfig.private_directory() as directory:
                target_client = target_kubeconfig.api_client(credentials, directory)
                nodes = client.CoreV1Api(target_client).list_node(_request_timeout=self.options.target_timeout).items
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the cluster may be unreachable: say so
            LOGGER.info("%s/%s: the cluster's API did not answer: %s", meta["namespace"], meta["name"], exc)
            status["conditions"] = jobs.set_condition(status.get("conditions"), "Ready", False, "Unreachable",
                                                      f"the cluster's API server did not answer: {str(exc)[:300]}",
                                                      generation)
            return
        roles = {host["name"]: sorted(host.get("roles") or []) for host in applied.get("hosts") or []}
        entries: list[dict[str, Any]] = []
        node: Any
        for node in nodes:
            ready = any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))
            entries.append({"name": node.metadata.name, "ready": ready,
                            "kubernetesVersion": (node.status.node_info.kubelet_version if node.status.node_info else "") or "",
                            "roles": roles.get(node.metadata.name, [])})
        entries.sort(key=lambda e: e["name"])
        ready_count = sum(1 for e in entries if e["ready"])
        status["nodes"] = entries
        status["nodesReady"] = f"{ready_count}/{len(roles)}"
        all_ready = ready_count == len(roles) and {e["name"] for e in entries} >= set(roles)
        missing = sorted(set(roles) - {e["name"] for e in entries if e["ready"]})
        status["conditions"] = jobs.set_condition(
            status.get("conditions"), "Ready", all_ready, "NodesReady" if all_ready else "NodesNotReady",
            "every node is Ready" if all_ready else f"not Ready: {', '.join(missing)}", int(meta.get("generation") or 0))

    def count_phases(self) -> None:
        counts = dict.fromkeys(PHASES, 0)
        for obj in self.list_clusters():
            phase = (obj.get("status") or {}).get("phase") or "Pending"
            counts[phase] = counts.get(phase, 0) + 1
        for phase, count in counts.items():
            self.metrics.clusters.labels(phase=phase).set(count)
        self.metrics.running.set(self.running_operations())
