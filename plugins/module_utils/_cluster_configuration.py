# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""ClusterConfiguration components, plan and status records, in pure Python.

KubeSphere 3.x users describe their platform in one ClusterConfiguration resource
(installer.kubesphere.io/v1alpha1, ``ks-installer`` in ``kubesphere-system``); ks-installer
installs what is enabled and writes ``status.<component>.status: enabled`` so later runs skip it.

This module knows the components ks-installer has, where each one's switch and settings live in
``spec`` and where its status lives under ``status`` (ks-installer's own keys), and decides for each
one what a run has to do: install, reapply (its spec section changed), uninstall (switched off, or
failed and switched off), or nothing. It also builds the status record slipway writes:

    status:
      <component>:                 # ks-installer's key, e.g. logging, metricsServer, redis
        status: enabled            # ks-installer's field: enabled | failed | disabled
        enabledTime: "2024-05-01T10:00:00Z"   # ks-installer's field; RFC 3339, time of this record
        slipway:                   # slipway's own record, ignored by ks-installer
          specHash: <sha256 of the component's spec section>   # enabled and failed
          reason: <text>                                      # failed (optional otherwise)
        <child>: {...}             # nested components, e.g. status.logging.logsidecar

A record without ``slipway`` was written by ks-installer: it counts as enabled and current.

No Kubernetes import here: everything is plain data in, plain data out, so every rule is a unit test.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

GROUP = "installer.kubesphere.io"
VERSION = "v1alpha1"
API_VERSION = GROUP + "/" + VERSION
KIND = "ClusterConfiguration"
PLURAL = "clusterconfigurations"
DEFAULT_NAME = "ks-installer"
DEFAULT_NAMESPACE = "kubesphere-system"

STATUS_ENABLED = "enabled"
STATUS_FAILED = "failed"
STATUS_DISABLED = "disabled"
STATUSES = (STATUS_ENABLED, STATUS_FAILED, STATUS_DISABLED)

ACTION_INSTALL = "install"
ACTION_REAPPLY = "reapply"
ACTION_UNINSTALL = "uninstall"
ACTION_NONE = "none"
ACTIONS = (ACTION_INSTALL, ACTION_REAPPLY, ACTION_UNINSTALL, ACTION_NONE)

RECORD_KEY = "slipway"
RECORDED_BY_SLIPWAY = "slipway"
RECORDED_BY_KS_INSTALLER = "ks-installer"

# Components that read the logging storage (Elasticsearch or OpenSearch), as ks-installer's
# common role decides it; fluentbit ships logs, events and auditing records only.
STORAGE_CONSUMERS = ("logging", "events", "auditing", "servicemesh")
FLUENTBIT_CONSUMERS = ("logging", "events", "auditing")

Path = tuple  # a path of keys into spec or status, e.g. ("logging", "logsidecar")


def get_path(data: Any, path: Path) -> Any:
    """The value at ``path`` in nested dicts, or None where any step is missing or not a dict."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def is_true(value: Any) -> bool:
    """A switch is on when it is boolean true, or one of the strings YAML 1.1 reads as true."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on")
    return False


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _flag(path: Path) -> Callable[[dict], "tuple[bool, str]"]:
    dotted = ".".join(path)

    def decide(spec: dict) -> "tuple[bool, str]":
        value = get_path(spec, path)
        if is_true(value):
            return True, "spec.%s is true" % dotted
        if value is None:
            return False, "spec.%s is not set" % dotted
        return False, "spec.%s is %s" % (dotted, json.dumps(value))

    return decide


def _always(key: str) -> Callable[[dict], "tuple[bool, str]"]:
    def decide(spec: dict) -> "tuple[bool, str]":
        if get_path(spec, (key, "enabled")) is not None:
            return True, "always installed (spec.%s.enabled is ignored)" % key
        return True, "always installed"

    return decide


def _on(spec: dict, name: str) -> bool:
    """Whether a top-level component's own switch is on (openpitrix: its store)."""
    if name == "openpitrix":
        return is_true(get_path(spec, ("openpitrix", "store", "enabled")))
    return is_true(get_path(spec, (name, "enabled")))


def _needed_by(spec: dict, names: "tuple[str, ...]") -> "list[str]":
    return [name for name in names if _on(spec, name)]


def _multicluster(spec: dict) -> "tuple[bool, str]":
    role = get_path(spec, ("multicluster", "clusterRole"))
    if role == "host":
        return True, "spec.multicluster.clusterRole is host"
    return False, "spec.multicluster.clusterRole is %s" % (json.dumps(role) if role is not None else "not set")


def _topology(spec: dict) -> "tuple[bool, str]":
    kind = get_path(spec, ("network", "topology", "type"))
    if kind == "weave-scope":
        return True, "spec.network.topology.type is weave-scope"
    return False, "spec.network.topology.type is %s" % (json.dumps(kind) if kind is not None else "not set")


def _openldap(spec: dict) -> "tuple[bool, str]":
    if is_true(get_path(spec, ("common", "openldap", "enabled"))):
        return True, "spec.common.openldap.enabled is true"
    if _on(spec, "devops"):
        return True, "needed by devops"
    return False, "spec.common.openldap.enabled is not true and devops is off"


def _minio(spec: dict) -> "tuple[bool, str]":
    users = _needed_by(spec, ("devops", "openpitrix"))
    if not users:
        return False, "neither devops nor the openpitrix store is on"
    if get_path(spec, ("common", "s3")) is not None:
        return False, "spec.common.s3 points at external object storage"
    return True, "needed by " + ", ".join(users)


def _external(spec: dict, section: str, keys: "tuple[str, ...]") -> bool:
    return any(not _blank(get_path(spec, ("common", section, key))) for key in keys)


def _es(spec: dict) -> "tuple[bool, str]":
    users = _needed_by(spec, STORAGE_CONSUMERS)
    if not users:
        return False, "no component that stores logs is on"
    switch = get_path(spec, ("common", "es", "enabled"))
    if switch is None:
        # KubeSphere before 3.4 has no switch: Elasticsearch is the built-in store
        # unless OpenSearch is switched on.
        if is_true(get_path(spec, ("common", "opensearch", "enabled"))):
            return False, "spec.common.opensearch is the log store"
    elif not is_true(switch):
        return False, "spec.common.es.enabled is %s" % json.dumps(switch)
    if _external(spec, "es", ("externalElasticsearchHost", "externalElasticsearchUrl")):
        return False, "an external Elasticsearch is configured"
    return True, "log store needed by " + ", ".join(users)


def _opensearch(spec: dict) -> "tuple[bool, str]":
    users = _needed_by(spec, STORAGE_CONSUMERS)
    if not users:
        return False, "no component that stores logs is on"
    if not is_true(get_path(spec, ("common", "opensearch", "enabled"))):
        return False, "spec.common.opensearch.enabled is not true"
    if _external(spec, "opensearch", ("externalOpensearchHost",)):
        return False, "an external OpenSearch is configured"
    return True, "log store needed by " + ", ".join(users)


def _fluentbit(spec: dict) -> "tuple[bool, str]":
    users = _needed_by(spec, FLUENTBIT_CONSUMERS)
    if users:
        return True, "needed by " + ", ".join(users)
    return False, "none of logging, events, auditing is on"


def _redis(spec: dict) -> "tuple[bool, str]":
    return _flag(("common", "redis", "enabled"))(spec)


@dataclass(frozen=True)
class Component:
    """One installable part of KubeSphere, as ks-installer knows it."""

    name: str
    status_path: Path
    sections: "tuple[Path, ...]"
    wanted: Callable[[dict], "tuple[bool, str]"]
    parent: "str | None" = None
    # ks-installer installs this child inside its parent's role without a status of its own:
    # a parent that ks-installer marked enabled counts for the child too.
    inside_parent_for_ks_installer: bool = False
    description: str = ""
    children: "tuple[str, ...]" = field(default=())


def _component(name, status_path, sections, wanted, description, parent=None, inside_parent=False):
    return Component(
        name=name,
        status_path=tuple(status_path),
        sections=tuple(tuple(section) for section in sections),
        wanted=wanted,
        parent=parent,
        inside_parent_for_ks_installer=inside_parent,
        description=description,
    )


# In install order: ks-installer runs metrics-server and the common storage before ks-core,
# then the components; a child comes right after its parent. Uninstall in reverse.
_CATALOGUE = (
    _component("metrics_server", ["metricsServer"], [["metrics_server"]], _flag(("metrics_server", "enabled")),
               "metrics-server, for kubectl top and autoscaling"),
    _component("common.redis", ["redis"], [["common", "redis"]], _redis, "Redis cache for ks-apiserver"),
    _component("common.openldap", ["openldap"], [["common", "openldap"]], _openldap, "OpenLDAP account store"),
    _component("common.minio", ["minio"], [["common", "minio"]], _minio, "MinIO object store for DevOps and the App Store"),
    _component("common.es", ["es"], [["common", "es"]], _es, "built-in Elasticsearch log store"),
    _component("common.opensearch", ["opensearch"], [["common", "opensearch"]], _opensearch, "built-in OpenSearch log store"),
    _component("common.fluentbit", ["fluentbit"], [["common", "fluentbit"]], _fluentbit, "Fluent Bit operator, the log shipper"),
    _component("core", ["core"], [], _always("core"), "ks-apiserver, ks-console, ks-controller-manager and their config"),
    _component("monitoring", ["monitoring"], [["monitoring"], ["etcd"], ["common", "monitoring"]], _always("monitoring"),
               "Prometheus stack, node-exporter, kube-state-metrics, etcd and GPU monitoring"),
    _component("multicluster", ["multicluster"], [["multicluster"]], _multicluster, "multi-cluster control plane (host clusters)"),
    _component("openpitrix", ["openpitrix"], [["openpitrix"]], _flag(("openpitrix", "store", "enabled")), "App Store"),
    _component("network.topology", ["network", "topology"], [["network", "topology"]], _topology,
               "service topology (Weave Scope)"),
    _component("alerting", ["alerting"], [["alerting"]], _flag(("alerting", "enabled")), "alerting (Thanos Ruler)"),
    _component("auditing", ["auditing"], [["auditing"]], _flag(("auditing", "enabled")), "auditing"),
    _component("devops", ["devops"], [["devops"]], _flag(("devops", "enabled")), "DevOps (Jenkins, Argo CD)"),
    _component("events", ["events"], [["events"]], _flag(("events", "enabled")), "Kubernetes events exporter"),
    _component("events.ruler", ["events", "ruler"], [["events", "ruler"]], _flag(("events", "ruler", "enabled")),
               "events ruler (alerts on events)", parent="events"),
    _component("logging", ["logging"], [["logging"]], _flag(("logging", "enabled")), "logging"),
    _component("logging.logsidecar", ["logging", "logsidecar"], [["logging", "logsidecar"]],
               _flag(("logging", "logsidecar", "enabled")), "log sidecar injector", parent="logging", inside_parent=True),
    _component("servicemesh", ["servicemesh"], [["servicemesh"]], _flag(("servicemesh", "enabled")), "service mesh (Istio)"),
    _component("edgeruntime", ["edgeruntime"], [["edgeruntime"]], _flag(("edgeruntime", "enabled")), "edge runtime"),
    _component("edgeruntime.kubeedge", ["edgeruntime", "kubeedge"], [["edgeruntime", "kubeedge"]],
               _flag(("edgeruntime", "kubeedge", "enabled")), "KubeEdge CloudCore", parent="edgeruntime", inside_parent=True),
    _component("gatekeeper", ["gatekeeper"], [["gatekeeper"]], _flag(("gatekeeper", "enabled")), "Gatekeeper admission policies"),
)


def _with_children(catalogue):
    children: dict[str, list] = {}
    for component in catalogue:
        if component.parent:
            children.setdefault(component.parent, []).append(component.name)
    result = []
    for component in catalogue:
        result.append(Component(
            name=component.name,
            status_path=component.status_path,
            sections=component.sections,
            wanted=component.wanted,
            parent=component.parent,
            inside_parent_for_ks_installer=component.inside_parent_for_ks_installer,
            description=component.description,
            children=tuple(children.get(component.name, ())),
        ))
    return tuple(result)


CATALOGUE: "tuple[Component, ...]" = _with_children(_CATALOGUE)
COMPONENTS: "dict[str, Component]" = {component.name: component for component in CATALOGUE}
COMPONENT_NAMES: "tuple[str, ...]" = tuple(component.name for component in CATALOGUE)

# Top-level spec keys that are settings, not components.
SETTING_KEYS = frozenset((
    "persistence", "authentication", "local_registry", "namespace_override", "dev_tag", "etcd", "common",
    "monitoring", "multicluster", "network", "terminal", "zone", "console", "telemetry_enabled",
))
# Settings every component's objects are made from: where the images come from and the default
# storage class. A change to one of them reapplies every installed component, not just core.
SHARED_KEYS = ("local_registry", "namespace_override", "persistence")
# Spec keys ks-installer itself moved elsewhere in an earlier 3.x release.
LEGACY_KEYS = {
    "kubeedge": "replaced by edgeruntime.kubeedge in KubeSphere 3.3: move these settings under spec.edgeruntime.kubeedge",
    "networkpolicy": "moved to spec.network.networkpolicy in KubeSphere 3.1",
    "notification": "part of monitoring since KubeSphere 3.1: remove it",
}
_KNOWN_TOP = frozenset(path[0] for component in CATALOGUE for path in component.sections) | {"core"}
_KNOWN_COMMON = frozenset(path[1] for component in CATALOGUE for path in component.sections
                          if len(path) > 1 and path[0] == "common")
# Switches under spec.network that are settings of core, not components of their own.
_NETWORK_SETTINGS = frozenset(("networkpolicy", "ippool", "topology"))


def _has_switch(value: Any) -> bool:
    return isinstance(value, dict) and "enabled" in value


def unsupported_components(spec: dict) -> "list[tuple[str, Path, str]]":
    """Sections of spec that look like components (they have an ``enabled`` switch) slipway does not install.

    Returns (name, spec path, reason) for each, in spec order.
    """
    found: "list[tuple[str, Path, str]]" = []
    if not isinstance(spec, dict):
        return found
    for key, value in spec.items():
        if key in LEGACY_KEYS and isinstance(value, dict):
            found.append((key, (key,), LEGACY_KEYS[key]))
        elif key not in _KNOWN_TOP and key not in SETTING_KEYS and _has_switch(value):
            found.append((key, (key,), "unknown component: slipway.cluster does not install it"))
    for section, known in (("common", _KNOWN_COMMON), ("network", _NETWORK_SETTINGS)):
        values = spec.get(section)
        for key, value in (values.items() if isinstance(values, dict) else ()):
            if key not in known and _has_switch(value):
                found.append((section + "." + key, (section, key), "unknown component: slipway.cluster does not install it"))
    return found


def _delete_path(data: dict, path: Path) -> None:
    node: Any = data
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return
    if isinstance(node, dict):
        node.pop(path[-1], None)


def canonical_hash(value: Any) -> str:
    """sha256 of the canonical JSON form of a value (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def spec_section(spec: "dict | None", component: Component) -> Any:
    """The part of spec a component is installed from.

    A parent's section leaves out its children's sections (switching the logsidecar on does not
    reapply logging). core's section is everything no other component (known or not) claims, so
    no spec edit goes unnoticed. Every component's section also holds the SHARED_KEYS that are
    set, so moving the images to another registry reapplies them all.
    """
    spec = spec if isinstance(spec, dict) else {}
    if component.name == "core":
        rest = copy.deepcopy(spec)
        for other in CATALOGUE:
            for path in other.sections:
                _delete_path(rest, path)
        for dummy_name, path, dummy_reason in unsupported_components(spec):
            _delete_path(rest, path)
        for key in ("common", "network"):
            if rest.get(key) == {}:
                del rest[key]
        return rest
    parts = {}
    for path in component.sections:
        value = copy.deepcopy(get_path(spec, path))
        if isinstance(value, dict):
            for child in component.children:
                for child_path in COMPONENTS[child].sections:
                    if child_path[:len(path)] == path:
                        _delete_path(value, child_path[len(path):])
        parts[".".join(path)] = value
    for key in SHARED_KEYS:
        if not _blank_setting(spec.get(key)):
            parts[key] = copy.deepcopy(spec[key])
    return parts


def _blank_setting(value: Any) -> bool:
    """An unset shared setting: absent, null, "" or {} (ks-installer's files carry them empty)."""
    return value is None or value == "" or value == {}


def spec_hash(spec: "dict | None", component: Component) -> str:
    return canonical_hash(spec_section(spec, component))


def status_entry(status: "dict | None", component: Component) -> "dict | None":
    """The component's record under status, or None when there is none."""
    entry = get_path(status, component.status_path)
    return entry if isinstance(entry, dict) else None


def record_of(entry: "dict | None") -> "dict | None":
    """slipway's own record inside a status entry, or None when ks-installer wrote the entry."""
    if not isinstance(entry, dict):
        return None
    record = entry.get(RECORD_KEY)
    return record if isinstance(record, dict) else None


def wanted(spec: "dict | None", component: Component) -> "tuple[bool, str]":
    """Whether the component should be installed, and why (a child only when its parent is)."""
    spec = spec if isinstance(spec, dict) else {}
    if component.parent:
        parent_on, dummy = wanted(spec, COMPONENTS[component.parent])
        if not parent_on:
            return False, "its parent %s is off" % component.parent
    return component.wanted(spec)


@dataclass
class PlanEntry:
    name: str
    parent: "str | None"
    supported: bool
    enabled: bool
    status: "str | None"
    action: str
    reason: str
    spec_hash: "str | None"
    applied_spec_hash: "str | None"
    recorded_by: "str | None"
    enabled_time: "str | None"
    status_path: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _decide(on: bool, why: str, current: "str | None", recorded_by: "str | None",
            applied: "str | None", now_hash: str, failure: "str | None", inherited_from: "str | None"):
    if on:
        if current is None:
            if inherited_from:
                return ACTION_NONE, "%s; installed by ks-installer together with %s, taken as current" % (why, inherited_from)
            return ACTION_INSTALL, "%s; not installed yet" % why
        if current == STATUS_FAILED:
            detail = " (%s)" % failure if failure else ""
            return ACTION_INSTALL, "%s; the last attempt failed%s: retrying" % (why, detail)
        if current == STATUS_DISABLED:
            return ACTION_INSTALL, "%s; switched on again after it was removed" % why
        if current != STATUS_ENABLED:
            return ACTION_INSTALL, "%s; status %s is not one slipway knows: installing" % (why, json.dumps(current))
        if recorded_by == RECORDED_BY_KS_INSTALLER:
            return ACTION_NONE, "%s; enabled by ks-installer, taken as current" % why
        if applied != now_hash:
            return ACTION_REAPPLY, "%s; its spec section changed since it was applied" % why
        return ACTION_NONE, "%s; installed and its spec section is unchanged" % why
    if current == STATUS_ENABLED:
        return ACTION_UNINSTALL, "%s; installed, so it is removed" % why
    if current == STATUS_FAILED:
        return ACTION_UNINSTALL, "%s; a failed attempt may have left parts behind, so they are removed" % why
    if current == STATUS_DISABLED:
        return ACTION_NONE, "%s; already removed" % why
    if current is None:
        return ACTION_NONE, "%s; not installed" % why
    return ACTION_NONE, "%s; status %s is not one slipway knows: left alone" % (why, json.dumps(current))


def plan(spec: "dict | None", status: "dict | None") -> "list[dict]":
    """One entry per component, in install order, then one per unsupported section of spec.

    Each entry says whether the component is enabled in spec, its current status, the action
    (install, reapply, uninstall, none) and why.
    """
    spec = spec if isinstance(spec, dict) else {}
    status = status if isinstance(status, dict) else {}
    entries = []
    for component in CATALOGUE:
        on, why = wanted(spec, component)
        entry = status_entry(status, component)
        record = record_of(entry)
        current = entry.get("status") if entry else None
        recorded_by = None
        if current is not None:
            recorded_by = RECORDED_BY_SLIPWAY if record is not None else RECORDED_BY_KS_INSTALLER
        inherited_from = None
        if current is None and component.inside_parent_for_ks_installer and component.parent is not None:
            parent_entry = status_entry(status, COMPONENTS[component.parent])
            if parent_entry and parent_entry.get("status") == STATUS_ENABLED and record_of(parent_entry) is None:
                inherited_from = component.parent
        now_hash = spec_hash(spec, component)
        applied = record.get("specHash") if record else None
        failure = record.get("reason") if record else None
        action, reason = _decide(on, why, current, recorded_by, applied, now_hash, failure, inherited_from)
        entries.append(PlanEntry(
            name=component.name,
            parent=component.parent,
            supported=True,
            enabled=on,
            status=current,
            action=action,
            reason=reason,
            spec_hash=now_hash,
            applied_spec_hash=applied,
            recorded_by=recorded_by if current is not None else (RECORDED_BY_KS_INSTALLER if inherited_from else None),
            enabled_time=entry.get("enabledTime") if entry else None,
            status_path="status." + ".".join(component.status_path),
        ).as_dict())
    for name, path, why in unsupported_components(spec):
        on = is_true(get_path(spec, path + ("enabled",)))
        entry = get_path(status, path)
        entry = entry if isinstance(entry, dict) else None
        current = entry.get("status") if entry else None
        entries.append(PlanEntry(
            name=name,
            parent=None,
            supported=False,
            enabled=on,
            status=current,
            action=ACTION_NONE,
            reason=why,
            spec_hash=None,
            applied_spec_hash=None,
            recorded_by=None,
            enabled_time=entry.get("enabledTime") if entry else None,
            status_path="status." + ".".join(path),
        ).as_dict())
    return entries


def summarize(entries: "list[dict]") -> "dict[str, list[str]]":
    """Component names by action: install and reapply in install order, uninstall in reverse."""
    summary = {action: [entry["name"] for entry in entries if entry["action"] == action] for action in ACTIONS}
    summary[ACTION_UNINSTALL].reverse()
    return summary


def rfc3339_now(clock: "Callable[[], datetime.datetime] | None" = None) -> str:
    """The current time in UTC as RFC 3339 with second precision, e.g. 2024-05-01T10:00:00Z."""
    now = clock() if clock else datetime.datetime.now(datetime.timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.timezone.utc)
    return now.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def nest(path: Path, value: Any) -> dict:
    """``{path[0]: {path[1]: ... value}}``."""
    for key in reversed(path):
        value = {key: value}
    return value


def status_update(status: "dict | None", component: Component, new_status: str, spec_digest: "str | None",
                  reason: "str | None", now: str) -> "tuple[bool, dict | None, dict | None, dict | None]":
    """The status record slipway writes for one component.

    Returns (changed, patch, before, after): ``patch`` is a JSON merge patch of the whole object
    (``{"status": {...}}``) or None when the record already says so, in which case nothing is
    written and enabledTime keeps its value. ``before`` and ``after`` are the component's entry.
    A disabled record carries no spec hash, so it stays put whatever spec does later.
    """
    if new_status not in STATUSES:
        raise ValueError("status must be one of %s, not %s" % (", ".join(STATUSES), new_status))
    if new_status == STATUS_FAILED and _blank(reason):
        raise ValueError("a failed status needs a reason")
    digest = None if new_status == STATUS_DISABLED else spec_digest
    reason = None if _blank(reason) else reason
    before = status_entry(status, component)
    record = record_of(before)
    if (before is not None and record is not None and before.get("status") == new_status
            and record.get("specHash") == digest and record.get("reason") == reason):
        return False, None, copy.deepcopy(before), copy.deepcopy(before)
    entry_patch: "dict[str, Any]" = {
        "status": new_status,
        "enabledTime": now,
        RECORD_KEY: {"specHash": digest, "reason": reason},
    }
    if record is not None:
        # Drop keys of an older record layout so the record says exactly this.
        for key in record:
            entry_patch[RECORD_KEY].setdefault(key, None)
    after = apply_merge_patch(copy.deepcopy(before) if before is not None else {}, entry_patch)
    return True, {"status": nest(component.status_path, entry_patch)}, copy.deepcopy(before), after


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def make_merge_patch(before: Any, after: Any) -> Any:
    """The smallest RFC 7386 merge patch that turns ``before`` into ``after`` ({} when equal)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return copy.deepcopy(after)
    patch: "dict[str, Any]" = {}
    for key in before:
        if key not in after:
            patch[key] = None
    for key, value in after.items():
        if key not in before:
            patch[key] = copy.deepcopy(value)
        elif before[key] != value:
            if isinstance(before[key], dict) and isinstance(value, dict):
                patch[key] = make_merge_patch(before[key], value)
            else:
                patch[key] = copy.deepcopy(value)
    return patch


def desired_spec(existing: "dict | None", given: "dict | None", merge_type: str) -> dict:
    """The spec after applying ``given``: merged into ``existing`` (RFC 7386: null deletes) or replacing it."""
    given = given if isinstance(given, dict) else {}
    if merge_type == "replace":
        return copy.deepcopy(given)
    if merge_type != "merge":
        raise ValueError("merge_type must be merge or replace, not %s" % merge_type)
    return apply_merge_patch(existing if isinstance(existing, dict) else {}, given)


def select_cluster_configuration(documents: "list[Any]") -> dict:
    """The one ClusterConfiguration among parsed YAML documents (a whole kubesphere-installer.yaml works)."""
    found = [doc for doc in documents if isinstance(doc, dict) and doc.get("kind") == KIND]
    if not found:
        raise ValueError("no document of kind %s found" % KIND)
    if len(found) > 1:
        raise ValueError("%d documents of kind %s found; give exactly one" % (len(found), KIND))
    return found[0]


def check_definition(definition: Any, name: str, namespace: str) -> "list[str]":
    """Every problem with a ClusterConfiguration definition for the resource ``namespace/name``."""
    if not isinstance(definition, dict):
        return ["the definition is not a mapping"]
    problems = []
    if definition.get("apiVersion", API_VERSION) != API_VERSION:
        problems.append("apiVersion is %s, expected %s" % (definition.get("apiVersion"), API_VERSION))
    if definition.get("kind", KIND) != KIND:
        problems.append("kind is %s, expected %s" % (definition.get("kind"), KIND))
    metadata = definition.get("metadata") or {}
    if not isinstance(metadata, dict):
        problems.append("metadata is not a mapping")
        metadata = {}
    if metadata.get("name", name) != name:
        problems.append("metadata.name is %s, but this task manages %s (set the name option to change it)"
                        % (metadata.get("name"), name))
    if metadata.get("namespace", namespace) != namespace:
        problems.append("metadata.namespace is %s, but this task manages namespace %s (set the namespace option to change it)"
                        % (metadata.get("namespace"), namespace))
    if metadata.get("labels") is not None and not isinstance(metadata.get("labels"), dict):
        problems.append("metadata.labels is not a mapping")
    if definition.get("spec") is not None and not isinstance(definition.get("spec"), dict):
        problems.append("spec is not a mapping")
    return problems
