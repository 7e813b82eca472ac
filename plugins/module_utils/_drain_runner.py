# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""What the node_drain module does against the API server.

``NodeApi`` makes the REST calls (nodes, pods, evictions, PodDisruptionBudgets) with plain paths
and dicts, like ``ClusterConfigurationApi`` in _cluster_configuration_api; ``NodeDrainer`` cordons, sorts the pods with the
pure rules of _drain, evicts with retries while PodDisruptionBudgets refuse, waits for the evicted
pods to go, and exits or fails the module. The module's main() builds its AnsibleModule from
NODE_DRAIN_ARGS and calls run_node_drain; drain_check's main() builds it from DRAIN_CHECK_ARGS and calls
run_drain_check, which reads the whole cluster once and decides with the pure rules of _drain_check.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any
from urllib.parse import quote

from ansible_collections.slipway.cluster.plugins.module_utils import _drain as drain
from ansible_collections.slipway.cluster.plugins.module_utils import _drain_check as drain_check
# The connection of _k8s: the dynamic client without discovery, answers kept as plain data.
from ansible_collections.slipway.cluster.plugins.module_utils._k8s import (
    AUTH_ARG_SPEC,
    MERGE_PATCH,
    DynamicApiError,
    K8sError,
    Urllib3Error,
    api_client_or_fail,
    body_text,
    dynamic_client,
    plain_data,
)

STATES = ("drained", "cordoned", "uncordoned")

# How often an eviction a PodDisruptionBudget refused is tried again (kubectl drain: 5 s), and how
# often the evicted pods are looked for (kubectl drain: 1 s).
EVICTION_RETRY_SECONDS = 2.0
POLL_SECONDS = 1.0

NODE_DRAIN_ARGS: "dict[str, Any]" = dict(
    argument_spec=dict(
        copy.deepcopy(AUTH_ARG_SPEC),
        name={"type": "str", "required": True},
        state={"type": "str", "default": "drained", "choices": list(STATES)},
        timeout={"type": "int", "default": 300},
        force={"type": "bool", "default": False},
        grace_period={"type": "int"},
        delete_emptydir_data={"type": "bool", "default": True},
    ),
    supports_check_mode=True,
)


class NodeApi:
    """Nodes, their pods, evictions and PodDisruptionBudgets through the REST API, as plain dicts.

    ``requester`` is anything with DynamicClient's ``request(method, path, body=None, **params)``;
    a kubernetes ApiClient is wrapped in a DynamicClient.
    """

    def __init__(self, api_client=None, requester=None):
        if requester is None:
            requester = dynamic_client(api_client)
        self._requester = requester

    def _request(self, method: str, path: str, body: Any = None, **params) -> Any:
        try:
            return self._requester.request(method, path, body=body, serializer=plain_data, **params)
        except DynamicApiError as exc:
            text = body_text(exc)
            message = text
            try:
                message = json.loads(text).get("message") or text
            except (TypeError, ValueError, AttributeError):
                pass
            status = getattr(exc, "status", None)
            raise K8sError("%s %s failed: %s %s: %s" % (method.upper(), path, status, getattr(exc, "reason", ""), message),
                           status=status, reason=getattr(exc, "reason", None), body=message)
        except Urllib3Error as exc:
            raise K8sError("cannot reach the Kubernetes API server: %s" % exc)

    @staticmethod
    def _pod_path(pod: dict) -> str:
        return "/api/v1/namespaces/%s/pods/%s" % (quote(drain.pod_namespace(pod), safe=""), quote(drain.pod_name(pod), safe=""))

    def get_node(self, name: str) -> "dict | None":
        try:
            return self._request("get", "/api/v1/nodes/" + quote(name, safe=""))
        except K8sError as exc:
            if exc.status == 404:
                return None
            raise

    def set_unschedulable(self, name: str, unschedulable: bool) -> dict:
        """Cordon (true) or uncordon (the field removed, as kubectl uncordon does)."""
        return self._request("patch", "/api/v1/nodes/" + quote(name, safe=""),
                             body={"spec": {"unschedulable": True if unschedulable else None}}, content_type=MERGE_PATCH)

    def pods_on(self, node: str) -> "list[dict]":
        listing = self._request("get", "/api/v1/pods", field_selector="spec.nodeName=" + node)
        return [item for item in (listing or {}).get("items") or [] if isinstance(item, dict)]

    def _items(self, path: str) -> "list[dict]":
        listing = self._request("get", path)
        return [item for item in (listing or {}).get("items") or [] if isinstance(item, dict)]

    def nodes(self) -> "list[dict]":
        return self._items("/api/v1/nodes")

    def all_pods(self) -> "list[dict]":
        return self._items("/api/v1/pods")

    def pdbs(self) -> "list[dict]":
        return self._items("/apis/policy/v1/poddisruptionbudgets")

    @staticmethod
    def _delete_options(grace_period: "int | None") -> dict:
        options: "dict[str, Any]" = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period is not None:
            options["gracePeriodSeconds"] = grace_period
        return options

    def evict(self, pod: dict, grace_period: "int | None") -> "tuple[str, str]":
        """("evicted", ""), ("refused", what the API server said: a PodDisruptionBudget allows no
        disruption now) or ("gone", "")."""
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": drain.pod_name(pod), "namespace": drain.pod_namespace(pod)},
            "deleteOptions": self._delete_options(grace_period),
        }
        try:
            self._request("post", self._pod_path(pod) + "/eviction", body=body)
        except K8sError as exc:
            if exc.status == 429:
                return "refused", exc.body if isinstance(exc.body, str) else ""
            if exc.status == 404:
                return "gone", ""
            raise
        return "evicted", ""

    def delete_pod(self, pod: dict, grace_period: "int | None") -> bool:
        """Delete the pod (no eviction, so no PodDisruptionBudget is asked); False when it was gone already."""
        try:
            self._request("delete", self._pod_path(pod), body=self._delete_options(grace_period))
        except K8sError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def still_there(self, pod: dict) -> bool:
        """Whether this very pod (same uid) still exists: a StatefulSet's replacement has the name but not the uid."""
        try:
            current = self._request("get", self._pod_path(pod))
        except K8sError as exc:
            if exc.status == 404:
                return False
            raise
        return drain.pod_uid(current or {}) == drain.pod_uid(pod)


def connect(module) -> NodeApi:
    """The API for the module's connection options; fails the module when that cannot be."""
    return NodeApi(api_client_or_fail(module))


class NodeDrainer:
    """Brings one node to the wanted state, recording what it did in ``result``; check mode reads only."""

    def __init__(self, module, api: NodeApi):
        self.module = module
        self.api = api
        self.params = module.params
        self.name = module.params["name"]
        self.grace_period = module.params["grace_period"]
        self.result: "dict[str, Any]" = {
            "changed": False, "node": self.name, "cordoned": False,
            "evicted": [], "deleted": [], "forced": [], "skipped": [], "blocking": [],
        }

    def fail(self, msg: str, **extra) -> None:
        self.module.fail_json(msg=msg, **dict(self.result, **extra))

    def run(self) -> None:
        for option in ("timeout", "grace_period"):
            if self.params[option] is not None and self.params[option] < 0:
                self.fail("%s must be 0 or more, not %d" % (option, self.params[option]))
        node = self.api.get_node(self.name)
        if node is None:
            self.fail("node %s not found" % self.name)
        unschedulable = bool(((node or {}).get("spec") or {}).get("unschedulable"))
        wanted = self.params["state"] != "uncordoned"
        if unschedulable != wanted:
            self.result["changed"] = True
            if not self.module.check_mode:
                self.api.set_unschedulable(self.name, wanted)
        self.result["cordoned"] = wanted
        if self.params["state"] == "drained":
            self.drain()
        self.module.exit_json(**self.result)

    def drain(self) -> None:
        plan = drain.plan_drain(self.api.pods_on(self.name), force=self.params["force"],
                                delete_emptydir_data=self.params["delete_emptydir_data"])
        self.result["skipped"] = plan.skipped
        if plan.refused:
            self.fail(drain.refusal_message(self.name, plan.refused), refused=plan.refused)
        if plan.unmanaged:
            self.module.warn("node %s: pods without a controller are evicted (force: true) and nothing will recreate them: %s"
                             % (self.name, ", ".join(plan.unmanaged)))
        if self.module.check_mode:
            self.result["deleted"] = [drain.pod_key(pod) for pod in plan.delete]
            self.result["evicted"] = [drain.pod_key(pod) for pod in plan.evict]
            self.result["changed"] = self.result["changed"] or bool(plan.delete or plan.evict)
            return
        for pod in plan.delete:
            if self.api.delete_pod(pod, self.grace_period):
                self.result["deleted"].append(drain.pod_key(pod))
                self.result["changed"] = True
        deadline = time.monotonic() + self.params["timeout"]
        refused, evicted = self.evict(plan.evict, deadline)
        terminating = self.wait_gone(evicted, deadline)
        if refused or terminating:
            self.blocked(refused, terminating)

    def _sleep_until_next(self, interval: float, deadline: float) -> bool:
        """Sleep ``interval`` seconds, or until the deadline when that comes first; False when it has passed."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(interval, left))
        return True

    def evict(self, pods: "list[dict]", deadline: float) -> "tuple[list[tuple[dict, str]], list[dict]]":
        """Evict every pod, again every EVICTION_RETRY_SECONDS while refused, until the deadline.

        Returns the pods still refused (with the API server's last word) and the pods evicted.
        """
        pending = [(pod, "") for pod in pods]
        evicted: "list[dict]" = []
        while True:
            refused = []
            for pod, dummy in pending:
                outcome, message = self.api.evict(pod, self.grace_period)
                if outcome == "refused":
                    refused.append((pod, message))
                elif outcome == "evicted":
                    evicted.append(pod)
                    self.result["evicted"].append(drain.pod_key(pod))
                    self.result["changed"] = True
            pending = refused
            if not pending or not self._sleep_until_next(EVICTION_RETRY_SECONDS, deadline):
                return pending, evicted

    def wait_gone(self, pods: "list[dict]", deadline: float) -> "list[dict]":
        """Wait until the evicted pods are gone or the deadline passes; the pods still there."""
        while True:
            pods = [pod for pod in pods if self.api.still_there(pod)]
            if not pods or not self._sleep_until_next(POLL_SECONDS, deadline):
                return pods

    def blocked(self, refused: "list[tuple[dict, str]]", terminating: "list[dict]") -> None:
        """The timeout passed with pods left: fail naming them and their PodDisruptionBudgets, or delete them (force)."""
        pdbs: "list[dict]" = []
        if refused:
            try:
                pdbs = self.api.pdbs()
            except K8sError as exc:
                self.module.warn("cannot list the PodDisruptionBudgets that refuse the evictions: %s" % exc.msg)
        self.result["blocking"] = (
            [drain.blocking_entry(pod, drain.BLOCK_REFUSED, pdbs, message) for pod, message in refused]
            + [drain.blocking_entry(pod, drain.BLOCK_TERMINATING, pdbs) for pod in terminating])
        if not self.params["force"]:
            self.fail(drain.timeout_message(self.name, self.params["timeout"], self.result["blocking"]))
        for pod in [pod for pod, dummy in refused] + terminating:
            if self.api.delete_pod(pod, self.grace_period):
                self.result["forced"].append(drain.pod_key(pod))
                self.result["changed"] = True
        if self.result["forced"]:
            self.module.warn("node %s: deleted after %d s without their PodDisruptionBudgets' consent (force: true): %s"
                             % (self.name, self.params["timeout"],
                                ", ".join(drain.describe_blocking(entry) for entry in self.result["blocking"])))


def run_node_drain(module) -> None:
    drainer = NodeDrainer(module, connect(module))
    try:
        drainer.run()
    except K8sError as exc:
        drainer.fail(exc.msg, api_status=exc.status, api_reason=exc.reason, api_body=exc.body)


DRAIN_CHECK_ARGS: "dict[str, Any]" = dict(
    argument_spec=dict(
        copy.deepcopy(AUTH_ARG_SPEC),
        nodes={"type": "list", "elements": "raw", "required": True},
        after={"type": "str", "default": "uncordoned", "choices": list(drain_check.AFTER_CHOICES)},
        ignore={"type": "list", "elements": "str", "default": []},
        force={"type": "bool", "default": False},
    ),
    supports_check_mode=True,
)


def run_drain_check(module) -> None:
    """Read the Nodes, Pods and PodDisruptionBudgets once, decide with _drain_check, and report; changes nothing."""
    api = connect(module)
    try:
        nodes, pods, pdbs = api.nodes(), api.all_pods(), api.pdbs()
    except K8sError as exc:
        module.fail_json(msg=exc.msg, api_status=exc.status, api_reason=exc.reason, api_body=exc.body)
    result = drain_check.drain_blockers(nodes, pods, pdbs, module.params["nodes"], after=module.params["after"],
                                        ignore=module.params["ignore"], force=module.params["force"])
    if result["problems"]:
        module.fail_json(msg="; ".join(result["problems"]), **dict(result, changed=False))
    for entry in result["ignored"]:
        module.warn("overridden by ignore: %s" % entry["message"])
    module.exit_json(changed=False, **result)
