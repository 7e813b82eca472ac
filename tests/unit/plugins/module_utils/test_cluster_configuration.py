# Unit tests of the ClusterConfiguration plan and status logic: every action rule, nested
# components, ks-installer's status format, unknown keys, and ks-installer's published files.
from __future__ import annotations

import copy
import datetime
import os

import pytest
import yaml

from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration as cc

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
ALWAYS = ["core", "monitoring"]


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return list(yaml.safe_load_all(handle))


def published(name):
    return cc.select_cluster_configuration(fixture(name))


V332 = "ks-installer-v3.3.2-cluster-configuration.yaml"
V341 = "kubekey-v3.4.1-cluster-configuration.yaml"


def entry_of(entries, name):
    found = [entry for entry in entries if entry["name"] == name]
    assert len(found) == 1, name
    return found[0]


def installed(spec, names, extra=None):
    """A status in which slipway installed ``names`` from ``spec``."""
    status = {}
    for name in names:
        component = cc.COMPONENTS[name]
        record = {"status": "enabled", "enabledTime": "2024-05-01T10:00:00Z",
                  "slipway": {"specHash": cc.spec_hash(spec, component), "reason": None}}
        record["slipway"] = {k: v for k, v in record["slipway"].items() if v is not None}
        status = cc.apply_merge_patch(status, cc.nest(component.status_path, record))
    return cc.apply_merge_patch(status, extra or {})


def actions(spec, status=None):
    return cc.summarize(cc.plan(spec, status or {}))


# --- the catalogue --------------------------------------------------------------------------

def test_catalogue_names_are_unique_and_parents_come_first():
    assert len(cc.COMPONENT_NAMES) == len(set(cc.COMPONENT_NAMES))
    for index, component in enumerate(cc.CATALOGUE):
        if component.parent:
            assert cc.COMPONENT_NAMES.index(component.parent) < index
            assert component.name in cc.COMPONENTS[component.parent].children
            assert component.status_path[:-1] == cc.COMPONENTS[component.parent].status_path


@pytest.mark.parametrize("name, status_path", [
    ("core", ("core",)),
    ("metrics_server", ("metricsServer",)),
    ("common.redis", ("redis",)),
    ("common.openldap", ("openldap",)),
    ("common.minio", ("minio",)),
    ("common.es", ("es",)),
    ("common.opensearch", ("opensearch",)),
    ("common.fluentbit", ("fluentbit",)),
    ("events.ruler", ("events", "ruler")),
    ("logging.logsidecar", ("logging", "logsidecar")),
    ("network.topology", ("network", "topology")),
    ("edgeruntime.kubeedge", ("edgeruntime", "kubeedge")),
    ("openpitrix", ("openpitrix",)),
    ("multicluster", ("multicluster",)),
])
def test_status_keys_are_ks_installers(name, status_path):
    assert cc.COMPONENTS[name].status_path == status_path


# --- one component through every action rule ----------------------------------------------

SPEC_ON = {"devops": {"enabled": True, "jenkinsMemoryLim": "4Gi"}}
SPEC_OFF = {"devops": {"enabled": False, "jenkinsMemoryLim": "4Gi"}}
HASH_ON = cc.spec_hash(SPEC_ON, cc.COMPONENTS["devops"])


@pytest.mark.parametrize("spec, entry, action, words", [
    pytest.param(SPEC_ON, None, "install", "not installed yet", id="on-missing-status"),
    pytest.param(SPEC_ON, {"status": "failed", "enabledTime": "t", "slipway": {"specHash": HASH_ON, "reason": "timeout"}},
                 "install", "the last attempt failed (timeout): retrying", id="on-failed-retried"),
    pytest.param(SPEC_ON, {"status": "disabled", "enabledTime": "t", "slipway": {}},
                 "install", "switched on again", id="on-disabled"),
    pytest.param(SPEC_ON, {"status": "enabled", "enabledTime": "t", "slipway": {"specHash": HASH_ON}},
                 "none", "unchanged", id="on-current"),
    pytest.param(SPEC_ON, {"status": "enabled", "enabledTime": "t", "slipway": {"specHash": "0" * 64}},
                 "reapply", "changed since it was applied", id="on-spec-changed"),
    pytest.param(SPEC_ON, {"status": "enabled", "enabledTime": "2023-06-21T12:26:53CST"},
                 "none", "enabled by ks-installer, taken as current", id="on-ks-installer"),
    pytest.param(SPEC_ON, {"status": "installing"}, "install", 'status "installing" is not one slipway knows',
                 id="on-unknown-status"),
    pytest.param(SPEC_OFF, {"status": "enabled", "enabledTime": "t", "slipway": {"specHash": HASH_ON}},
                 "uninstall", "installed, so it is removed", id="switched-off"),
    pytest.param(SPEC_OFF, {"status": "enabled", "enabledTime": "2023-06-21T12:26:53CST"},
                 "uninstall", "installed, so it is removed", id="switched-off-ks-installer"),
    pytest.param(SPEC_OFF, {"status": "failed", "slipway": {"specHash": HASH_ON, "reason": "timeout"}},
                 "uninstall", "failed attempt may have left parts behind", id="failed-then-off-removed"),
    pytest.param(SPEC_OFF, {"status": "disabled", "slipway": {}}, "none", "already removed", id="off-disabled"),
    pytest.param(SPEC_OFF, None, "none", "not installed", id="off-missing"),
    pytest.param({}, None, "none", "spec.devops.enabled is not set", id="absent-from-spec"),
    pytest.param(SPEC_OFF, {"status": "installing"}, "none", "left alone", id="off-unknown-status"),
])
def test_action_rules(spec, entry, action, words):
    status = {"devops": entry} if entry is not None else {}
    devops = entry_of(cc.plan(spec, status), "devops")
    assert devops["action"] == action
    assert words in devops["reason"]
    assert devops["enabled"] is (spec.get("devops", {}).get("enabled") is True)
    assert devops["status"] == (entry or {}).get("status")


def test_plan_entry_reports_hashes_and_who_wrote_the_status():
    status = {"devops": {"status": "enabled", "enabledTime": "2024-05-01T10:00:00Z", "slipway": {"specHash": "old"}}}
    devops = entry_of(cc.plan(SPEC_ON, status), "devops")
    assert devops == {
        "name": "devops", "parent": None, "supported": True, "enabled": True, "status": "enabled",
        "action": "reapply", "reason": devops["reason"], "spec_hash": HASH_ON, "applied_spec_hash": "old",
        "recorded_by": "slipway", "enabled_time": "2024-05-01T10:00:00Z", "status_path": "status.devops",
    }
    ks = entry_of(cc.plan(SPEC_ON, {"devops": {"status": "enabled", "enabledTime": "x"}}), "devops")
    assert ks["recorded_by"] == "ks-installer"
    assert ks["applied_spec_hash"] is None
    assert entry_of(cc.plan(SPEC_ON, {}), "devops")["recorded_by"] is None


def test_a_reinstalled_component_records_its_hash_and_the_plan_settles():
    spec = {"devops": {"enabled": True}}
    assert actions(spec)["install"] == ["common.openldap", "common.minio", "core", "monitoring", "devops"]
    status = installed(spec, ["core", "monitoring", "common.openldap", "common.minio", "devops"])
    assert actions(spec, status)["install"] == []
    assert actions(spec, status)["reapply"] == []


# --- core and monitoring ---------------------------------------------------------------------

@pytest.mark.parametrize("spec", [{}, {"common": {"core": {"console": {"port": 30880}}}}, None, "not a mapping"])
def test_core_is_always_installed(spec):
    planned = cc.plan(spec, {})
    assert entry_of(planned, "core")["enabled"] is True
    assert cc.summarize(planned)["install"] == ALWAYS


def test_core_cannot_be_switched_off():
    core = entry_of(cc.plan({"core": {"enabled": False}}, {"core": {"status": "enabled"}}), "core")
    assert core["action"] == "none"
    assert core["enabled"] is True
    assert "spec.core.enabled is ignored" in core["reason"]
    monitoring = entry_of(cc.plan({"monitoring": {"enabled": False}}, {}), "monitoring")
    assert (monitoring["action"], monitoring["enabled"]) == ("install", True)
    assert "spec.monitoring.enabled is ignored" in monitoring["reason"]


def test_core_reapplies_on_its_own_settings_only():
    spec = published(V332)["spec"]
    status = installed(spec, ALWAYS)
    console = cc.apply_merge_patch(spec, {"common": {"core": {"console": {"port": 30990}}}})
    assert actions(console, status)["reapply"] == ["core"]
    unknown_setting = cc.apply_merge_patch(spec, {"telemetry_enabled": False, "zone": "cn"})
    assert actions(unknown_setting, status)["reapply"] == ["core"]
    network_policy = cc.apply_merge_patch(spec, {"network": {"networkpolicy": {"enabled": True}}})
    assert actions(network_policy, status)["reapply"] == ["core"]
    devops_setting = cc.apply_merge_patch(spec, {"devops": {"jenkinsMemoryLim": "8Gi"}})
    assert actions(devops_setting, status)["reapply"] == []


@pytest.mark.parametrize("edit", [
    {"etcd": {"monitoring": True, "endpointIps": "192.0.2.10"}},
    {"monitoring": {"gpu": {"nvidia_dcgm_exporter": {"enabled": True}}}},
    {"monitoring": {"node_exporter": {"port": 9200}}},
    {"common": {"monitoring": {"endpoint": "http://prometheus.example:9090"}}},
])
def test_monitoring_settings_reapply_monitoring_only(edit):
    spec = published(V332)["spec"]
    status = installed(spec, ALWAYS)
    assert actions(cc.apply_merge_patch(spec, edit), status)["reapply"] == ["monitoring"]


# --- nested components -----------------------------------------------------------------------

@pytest.mark.parametrize("parent, child, parent_spec, child_switch", [
    ("events", "events.ruler", {"events": {"enabled": True}}, {"events": {"ruler": {"enabled": True}}}),
    ("logging", "logging.logsidecar", {"logging": {"enabled": True}}, {"logging": {"logsidecar": {"enabled": True}}}),
    ("edgeruntime", "edgeruntime.kubeedge", {"edgeruntime": {"enabled": True}},
     {"edgeruntime": {"kubeedge": {"enabled": True}}}),
])
def test_child_only_when_parent_is_on(parent, child, parent_spec, child_switch):
    child_only = cc.plan(child_switch, {})
    assert entry_of(child_only, child)["enabled"] is False
    assert "its parent %s is off" % parent in entry_of(child_only, child)["reason"]
    both = cc.plan(cc.apply_merge_patch(parent_spec, child_switch), {})
    assert entry_of(both, parent)["action"] == "install"
    assert entry_of(both, child)["action"] == "install"
    assert entry_of(both, child)["parent"] == parent
    parent_only = cc.plan(parent_spec, {})
    assert entry_of(parent_only, child)["action"] == "none"


def test_parent_switched_off_removes_children_first():
    spec = {"logging": {"enabled": True, "logsidecar": {"enabled": True}}, "events": {"enabled": True, "ruler": {"enabled": True}}}
    status = installed(spec, ["events", "events.ruler", "logging", "logging.logsidecar", "common.es", "common.fluentbit"])
    off = cc.apply_merge_patch(spec, {"logging": {"enabled": False}, "events": {"enabled": False}})
    summary = actions(off, status)
    assert summary["uninstall"] == ["logging.logsidecar", "logging", "events.ruler", "events", "common.fluentbit", "common.es"]
    assert "its parent logging is off" in entry_of(cc.plan(off, status), "logging.logsidecar")["reason"]


def test_child_edit_reapplies_the_child_only():
    spec = {"events": {"enabled": True, "ruler": {"enabled": True, "replicas": 2}}}
    status = installed(spec, ["events", "events.ruler"])
    assert actions(cc.apply_merge_patch(spec, {"events": {"ruler": {"replicas": 3}}}), status)["reapply"] == ["events.ruler"]
    assert actions(cc.apply_merge_patch(spec, {"events": {"ruler": {"enabled": False}}}), status)["uninstall"] == ["events.ruler"]
    assert actions(cc.apply_merge_patch(spec, {"events": {"exporter": {"resources": {}}}}), status)["reapply"] == ["events"]


def test_ruler_written_by_ks_installer_nests_under_events():
    spec = {"events": {"enabled": True, "ruler": {"enabled": True}}}
    status = {"events": {"status": "enabled", "enabledTime": "2023-06-21T12:23:47CST",
                         "ruler": {"status": "enabled", "enabledTime": "2023-06-21T12:23:48CST"}}}
    planned = cc.plan(spec, status)
    assert entry_of(planned, "events.ruler")["status"] == "enabled"
    assert entry_of(planned, "events.ruler")["recorded_by"] == "ks-installer"
    assert entry_of(planned, "events.ruler")["action"] == "none"
    assert entry_of(planned, "events.ruler")["status_path"] == "status.events.ruler"


def test_ruler_switched_on_after_ks_installer_installed_events_is_installed():
    # ks-installer writes status.events.ruler only when it installs the ruler, so its absence is real.
    spec = {"events": {"enabled": True, "ruler": {"enabled": True}}}
    status = {"events": {"status": "enabled", "enabledTime": "2023-06-21T12:23:47CST"}}
    assert entry_of(cc.plan(spec, status), "events.ruler")["action"] == "install"


def test_logsidecar_inherits_ks_installers_logging_status():
    spec = {"logging": {"enabled": True, "logsidecar": {"enabled": True}}}
    ks_status = {"logging": {"status": "enabled", "enabledTime": "2023-06-21T12:24:18CST"}}
    sidecar = entry_of(cc.plan(spec, ks_status), "logging.logsidecar")
    assert sidecar["action"] == "none"
    assert "installed by ks-installer together with logging" in sidecar["reason"]
    assert sidecar["recorded_by"] == "ks-installer"
    ours = installed(spec, ["logging"])
    assert entry_of(cc.plan(spec, ours), "logging.logsidecar")["action"] == "install"


def test_children_are_recorded_without_touching_the_parent_entry():
    component = cc.COMPONENTS["logging.logsidecar"]
    status = {"logging": {"status": "enabled", "enabledTime": "2023-06-21T12:24:18CST"}}
    changed, patch, before, after = cc.status_update(status, component, "enabled", "h", None, "2024-05-01T10:00:00Z")
    assert changed and before is None
    assert patch == {"status": {"logging": {"logsidecar": {
        "status": "enabled", "enabledTime": "2024-05-01T10:00:00Z", "slipway": {"specHash": "h", "reason": None}}}}}
    merged = cc.apply_merge_patch({"status": status}, patch)["status"]
    assert merged["logging"]["status"] == "enabled"
    assert merged["logging"]["enabledTime"] == "2023-06-21T12:24:18CST"
    assert after == {"status": "enabled", "enabledTime": "2024-05-01T10:00:00Z", "slipway": {"specHash": "h"}}


def test_parent_section_leaves_children_out():
    spec = {"logging": {"enabled": True, "containerruntime": "containerd", "logsidecar": {"enabled": True, "replicas": 2}}}
    assert cc.spec_section(spec, cc.COMPONENTS["logging"]) == {"logging": {"enabled": True, "containerruntime": "containerd"}}
    assert cc.spec_section(spec, cc.COMPONENTS["logging.logsidecar"]) == {"logging.logsidecar": {"enabled": True, "replicas": 2}}


# --- common.* as ks-installer's common role decides ---------------------------------------

@pytest.mark.parametrize("spec, on", [
    ({}, []),
    ({"common": {"redis": {"enabled": True}}}, ["common.redis"]),
    ({"common": {"openldap": {"enabled": True}}}, ["common.openldap"]),
    ({"devops": {"enabled": True}}, ["common.openldap", "common.minio"]),
    ({"openpitrix": {"store": {"enabled": True}}}, ["common.minio"]),
    ({"devops": {"enabled": True}, "common": {"s3": {"endpoint": "http://s3.example"}}}, ["common.openldap"]),
    ({"logging": {"enabled": True}}, ["common.es", "common.fluentbit"]),
    ({"events": {"enabled": True}}, ["common.es", "common.fluentbit"]),
    ({"auditing": {"enabled": True}}, ["common.es", "common.fluentbit"]),
    ({"servicemesh": {"enabled": True}}, ["common.es"]),
    ({"logging": {"enabled": True}, "common": {"opensearch": {"enabled": True}}}, ["common.opensearch", "common.fluentbit"]),
    ({"logging": {"enabled": True}, "common": {"es": {"enabled": False}, "opensearch": {"enabled": True}}},
     ["common.opensearch", "common.fluentbit"]),
    ({"logging": {"enabled": True}, "common": {"es": {"enabled": True}, "opensearch": {"enabled": True}}},
     ["common.es", "common.opensearch", "common.fluentbit"]),
    ({"logging": {"enabled": True}, "common": {"es": {"externalElasticsearchHost": "es.example"}}}, ["common.fluentbit"]),
    ({"logging": {"enabled": True}, "common": {"es": {"externalElasticsearchUrl": "es.example"}}}, ["common.fluentbit"]),
    ({"logging": {"enabled": True}, "common": {"es": {"enabled": False},
                                               "opensearch": {"enabled": True, "externalOpensearchHost": "os.example"}}},
     ["common.fluentbit"]),
    ({"common": {"opensearch": {"enabled": True}, "es": {"enabled": True}}}, []),
])
def test_common_components(spec, on):
    planned = cc.plan(spec, {})
    assert [e["name"] for e in planned if e["name"].startswith("common.") and e["enabled"]] == on


def test_common_component_reason_names_its_users():
    spec = {"devops": {"enabled": True}, "openpitrix": {"store": {"enabled": True}}}
    assert entry_of(cc.plan(spec, {}), "common.minio")["reason"].startswith("needed by devops, openpitrix")


# --- switches and other top-level components -----------------------------------------------

@pytest.mark.parametrize("spec, name, on", [
    ({"multicluster": {"clusterRole": "host"}}, "multicluster", True),
    ({"multicluster": {"clusterRole": "member"}}, "multicluster", False),
    ({"multicluster": {"clusterRole": "none"}}, "multicluster", False),
    ({"network": {"topology": {"type": "weave-scope"}}}, "network.topology", True),
    ({"network": {"topology": {"type": "none"}}}, "network.topology", False),
    ({"openpitrix": {"store": {"enabled": True}}}, "openpitrix", True),
    ({"openpitrix": {"enabled": True}}, "openpitrix", False),
    ({"metrics_server": {"enabled": True}}, "metrics_server", True),
    ({"gatekeeper": {"enabled": True}}, "gatekeeper", True),
    ({"alerting": {"enabled": "true"}}, "alerting", True),
    ({"alerting": {"enabled": "yes"}}, "alerting", True),
    ({"alerting": {"enabled": "false"}}, "alerting", False),
    ({"alerting": {"enabled": 1}}, "alerting", False),
    ({"alerting": None}, "alerting", False),
    ({"alerting": "on"}, "alerting", False),
])
def test_switches(spec, name, on):
    assert entry_of(cc.plan(spec, {}), name)["enabled"] is on


# --- unknown and unsupported keys ---------------------------------------------------------

@pytest.mark.parametrize("spec, name, words", [
    ({"kubeedge": {"enabled": True}}, "kubeedge", "replaced by edgeruntime.kubeedge"),
    ({"networkpolicy": {"enabled": True}}, "networkpolicy", "moved to spec.network.networkpolicy"),
    ({"notification": {"enabled": False}}, "notification", "part of monitoring"),
    ({"metering": {"enabled": True}}, "metering", "unknown component"),
    ({"common": {"mysql": {"enabled": True}}}, "common.mysql", "unknown component"),
    ({"network": {"multus_cni": {"enabled": True}}}, "network.multus_cni", "unknown component"),
])
def test_unsupported_components_are_reported_not_acted_on(spec, name, words):
    planned = cc.plan(spec, {})
    entry = entry_of(planned, name)
    assert entry["supported"] is False
    assert entry["action"] == "none"
    assert words in entry["reason"]
    assert entry["enabled"] is spec_switch(spec, name)
    assert cc.summarize(planned)["install"] == ALWAYS


def spec_switch(spec, name):
    return cc.get_path(spec, tuple(name.split(".")) + ("enabled",)) is True


def test_unknown_component_status_is_shown():
    planned = cc.plan({"kubeedge": {"enabled": False}}, {"kubeedge": {"status": "enabled", "enabledTime": "x"}})
    entry = entry_of(planned, "kubeedge")
    assert (entry["status"], entry["enabled_time"], entry["status_path"]) == ("enabled", "x", "status.kubeedge")


@pytest.mark.parametrize("spec", [
    {"persistence": {"storageClass": ""}},
    {"terminal": {"timeout": 600}},
    {"common": {"monitoring": {"GPUMonitoring": {"enabled": True}}}},
    {"common": {"core": {"console": {"enableMultiLogin": True}}}},
    {"network": {"networkpolicy": {"enabled": True}, "ippool": {"type": "calico"}}},
    {"servicemesh": {"istio": {"components": {"cni": {"enabled": True}}}}},
    {"zone": "", "local_registry": "registry.example:5000"},
])
def test_settings_are_not_components(spec):
    assert [e for e in cc.plan(spec, {}) if not e["supported"]] == []


@pytest.mark.parametrize("spec", [
    {"common": "x", "network": 5, "logging": ["enabled"], "events": {"ruler": "on"}},
    {"common": {"redis": None, "es": "builtin"}, "devops": {"enabled": None}},
    {"openpitrix": {"store": True}, "multicluster": None, "edgeruntime": {"kubeedge": []}},
])
def test_malformed_sections_are_off_not_errors(spec):
    planned = cc.plan(spec, {"logging": "enabled", "events": ["x"], "core": None})
    assert cc.summarize(planned)["install"] == ALWAYS
    assert all(entry["supported"] for entry in planned)


def test_unsupported_sections_do_not_reapply_core():
    spec = {"kubeedge": {"enabled": False, "cloudCore": {"cloudhubPort": "10000"}}}
    status = installed(spec, ALWAYS)
    edited = cc.apply_merge_patch(spec, {"kubeedge": {"cloudCore": {"cloudhubPort": "10001"}}})
    assert actions(edited, status)["reapply"] == []


# --- ks-installer's published files --------------------------------------------------------

@pytest.mark.parametrize("name", [V332, V341])
def test_published_file_installs_core_and_monitoring_only(name):
    cluster_configuration = published(name)
    assert cc.check_definition(cluster_configuration, cc.DEFAULT_NAME, cc.DEFAULT_NAMESPACE) == []
    planned = cc.plan(cluster_configuration["spec"], {})
    summary = cc.summarize(planned)
    # ks-installer installs ks-core and the monitoring stack always; every switch in the
    # published file is off (the v3.4 defaults turn on the OpenSearch store and the events
    # ruler, but nothing uses the store and events is off), so nothing else is installed.
    assert summary["install"] == ALWAYS
    assert summary["reapply"] == summary["uninstall"] == []
    assert [e["name"] for e in planned if not e["supported"]] == []


def test_v341_defaults_switch_children_and_storage_on_but_they_wait_for_their_users():
    spec = published(V341)["spec"]
    assert cc.get_path(spec, ("events", "ruler", "enabled")) is True
    assert cc.get_path(spec, ("common", "opensearch", "enabled")) is True
    planned = cc.plan(spec, {})
    assert "its parent events is off" in entry_of(planned, "events.ruler")["reason"]
    assert "no component that stores logs is on" in entry_of(planned, "common.opensearch")["reason"]


USUAL_EDITS = {
    "etcd": {"monitoring": True, "endpointIps": "192.0.2.10"},
    "metrics_server": {"enabled": True},
    "monitoring": {"gpu": {"nvidia_dcgm_exporter": {"enabled": True}}},
    "logging": {"enabled": True, "logsidecar": {"enabled": True, "replicas": 2}},
    "events": {"enabled": True, "ruler": {"enabled": True, "replicas": 2}},
    "devops": {"enabled": True},
    "alerting": {"enabled": True},
    "auditing": {"enabled": True},
    "openpitrix": {"store": {"enabled": True}},
    "servicemesh": {"enabled": True},
}
USUAL_INSTALL = [
    "metrics_server", "common.openldap", "common.minio", "LOG_STORE", "common.fluentbit", "core", "monitoring",
    "openpitrix", "alerting", "auditing", "devops", "events", "events.ruler", "logging", "logging.logsidecar",
    "servicemesh",
]


@pytest.mark.parametrize("name, log_store", [(V332, "common.es"), (V341, "common.opensearch")])
def test_published_file_with_usual_edits_installs_exactly_those(name, log_store):
    spec = cc.apply_merge_patch(published(name)["spec"], USUAL_EDITS)
    expected = [log_store if item == "LOG_STORE" else item for item in USUAL_INSTALL]
    summary = actions(spec)
    assert summary["install"] == expected
    assert summary["reapply"] == summary["uninstall"] == []
    assert sorted(summary["none"]) == sorted(set(cc.COMPONENT_NAMES) - set(expected))


def test_usual_edits_on_a_cluster_ks_installer_installed_change_only_the_new_parts():
    spec = cc.apply_merge_patch(published(V332)["spec"], {"metrics_server": {"enabled": True},
                                                          "logging": {"enabled": True},
                                                          "events": {"enabled": True, "ruler": {"enabled": True}}})
    status = fixture("ks-installer-v3.3-status.yaml")[0]
    assert actions(spec, status)["install"] == []
    more = cc.apply_merge_patch(spec, {"devops": {"enabled": True}, "alerting": {"enabled": True}})
    assert actions(more, status)["install"] == ["common.openldap", "common.minio", "alerting", "devops"]
    fewer = cc.apply_merge_patch(spec, {"events": {"enabled": False}, "metrics_server": {"enabled": False}})
    assert actions(fewer, status)["uninstall"] == ["events.ruler", "events", "metrics_server"]


def test_ks_installer_status_keeps_its_extra_keys_when_recorded():
    status = fixture("ks-installer-v3.3-status.yaml")[0]
    changed, patch, before, after = cc.status_update(status, cc.COMPONENTS["core"], "enabled", "h", None, "2024-05-01T10:00:00Z")
    assert changed
    assert before == {"enabledTime": "2023-06-21T12:20:31CST", "status": "enabled", "version": "v3.3.2"}
    assert after == {"enabledTime": "2024-05-01T10:00:00Z", "status": "enabled", "version": "v3.3.2", "slipway": {"specHash": "h"}}
    assert cc.apply_merge_patch({"status": status}, patch)["status"]["clusterId"] == status["clusterId"]


def test_plan_is_the_same_for_spec_read_back_from_the_api():
    # The API server returns JSON: the same data, keys in any order.
    spec = published(V341)["spec"]
    reordered = yaml.safe_load(yaml.safe_dump(spec, sort_keys=True))
    assert cc.plan(spec, {}) == cc.plan(reordered, {})


# --- spec hashes ----------------------------------------------------------------------------

def test_hash_ignores_key_order_and_covers_values():
    component = cc.COMPONENTS["devops"]
    assert cc.spec_hash({"devops": {"a": 1, "b": 2}}, component) == cc.spec_hash({"devops": {"b": 2, "a": 1}}, component)
    assert cc.spec_hash({"devops": {"a": 1}}, component) != cc.spec_hash({"devops": {"a": "1"}}, component)
    assert len(cc.spec_hash({}, component)) == 64


def test_every_spec_key_belongs_to_exactly_one_hash_but_shared_settings_to_all():
    spec = cc.apply_merge_patch(published(V341)["spec"], USUAL_EDITS)
    before = {c.name: cc.spec_hash(spec, c) for c in cc.CATALOGUE}
    for path in leaf_paths(spec):
        edited = copy.deepcopy(spec)
        target = edited
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = ["edited"]
        after = {c.name: cc.spec_hash(edited, c) for c in cc.CATALOGUE}
        moved = [name for name in before if before[name] != after[name]]
        if path[0] in cc.SHARED_KEYS:
            assert moved == list(cc.COMPONENT_NAMES), path
        else:
            assert len(moved) == 1, (path, moved)


def leaf_paths(data, prefix=()):
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from leaf_paths(value, prefix + (key,))
    else:
        yield prefix


# --- status records ------------------------------------------------------------------------

NOW = "2024-05-01T10:00:00Z"
LATER = "2024-05-02T10:00:00Z"


@pytest.mark.parametrize("current, status, digest, reason, changed", [
    pytest.param(None, "enabled", "h", None, True, id="new"),
    pytest.param({"status": "enabled", "enabledTime": NOW, "slipway": {"specHash": "h"}}, "enabled", "h", None, False,
                 id="same-enabled"),
    pytest.param({"status": "enabled", "enabledTime": NOW, "slipway": {"specHash": "h"}}, "enabled", "h2", None, True,
                 id="reapplied"),
    pytest.param({"status": "enabled", "enabledTime": "2023-06-21T12:20:31CST"}, "enabled", "h", None, True,
                 id="ks-installer-adopted"),
    pytest.param({"status": "failed", "enabledTime": NOW, "slipway": {"specHash": "h", "reason": "boom"}},
                 "failed", "h", "boom", False, id="same-failure"),
    pytest.param({"status": "failed", "enabledTime": NOW, "slipway": {"specHash": "h", "reason": "boom"}},
                 "failed", "h", "timeout", True, id="other-failure"),
    pytest.param({"status": "failed", "enabledTime": NOW, "slipway": {"specHash": "h", "reason": "boom"}},
                 "enabled", "h", None, True, id="retry-succeeded"),
    pytest.param({"status": "disabled", "enabledTime": NOW, "slipway": {}}, "disabled", "h", None, False,
                 id="same-disabled"),
    pytest.param({"status": "disabled", "enabledTime": NOW, "slipway": {}}, "disabled", "other", None, False,
                 id="disabled-ignores-spec"),
    pytest.param({"status": "enabled", "enabledTime": NOW, "slipway": {"specHash": "h"}}, "disabled", "h", None, True,
                 id="removed"),
])
def test_status_update(current, status, digest, reason, changed):
    component = cc.COMPONENTS["devops"]
    stored = {"devops": current} if current is not None else {}
    did, patch, before, after = cc.status_update(stored, component, status, digest, reason, LATER)
    assert did is changed
    assert before == current
    if not changed:
        assert patch is None
        assert after == current
        return
    written = cc.apply_merge_patch({"status": stored}, patch)["status"]["devops"]
    assert written == after
    assert written["status"] == status
    assert written["enabledTime"] == LATER
    assert written["slipway"].get("specHash") == (None if status == "disabled" else digest)
    assert written["slipway"].get("reason") == reason
    assert cc.status_update({"devops": written}, component, status, digest, reason, "2030-01-01T00:00:00Z")[0] is False


def test_failed_needs_a_reason_and_status_must_be_known():
    component = cc.COMPONENTS["devops"]
    with pytest.raises(ValueError, match="needs a reason"):
        cc.status_update({}, component, "failed", "h", " ", NOW)
    with pytest.raises(ValueError, match="status must be one of"):
        cc.status_update({}, component, "installed", "h", None, NOW)


def test_success_after_failure_drops_the_reason_and_old_record_keys():
    current = {"status": "failed", "enabledTime": NOW, "slipway": {"specHash": "h", "reason": "boom", "attempts": 2}}
    did, patch, dummy, after = cc.status_update({"devops": current}, cc.COMPONENTS["devops"], "enabled", "h", None, LATER)
    assert did
    assert patch["status"]["devops"]["slipway"] == {"specHash": "h", "reason": None, "attempts": None}
    assert after == {"status": "enabled", "enabledTime": LATER, "slipway": {"specHash": "h"}}


@pytest.mark.parametrize("clock, expected", [
    (lambda: datetime.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=datetime.timezone.utc), "2024-05-01T10:00:00Z"),
    (lambda: datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2))), "2024-05-01T10:00:00Z"),
    (lambda: datetime.datetime(2024, 5, 1, 10, 0, 0), "2024-05-01T10:00:00Z"),
])
def test_rfc3339(clock, expected):
    assert cc.rfc3339_now(clock) == expected


def test_rfc3339_now_is_utc():
    value = cc.rfc3339_now()
    parsed = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    assert abs((datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - parsed).total_seconds()) < 60


# --- merge patches, spec merging, definitions -------------------------------------------------

@pytest.mark.parametrize("target, patch, result", [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_apply_merge_patch_rfc7386_examples(target, patch, result):
    assert cc.apply_merge_patch(target, patch) == result


@pytest.mark.parametrize("before, after", [
    ({}, {}),
    ({"a": 1}, {"a": 1}),
    ({"a": 1}, {"a": 2}),
    ({"a": 1, "b": 2}, {"a": 1}),
    ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3, "d": [1]}}),
    ({"a": {"b": 1}}, {"a": [1]}),
    ({"a": [1, 2]}, {"a": [2]}),
])
def test_make_merge_patch_round_trips(before, after):
    patch = cc.make_merge_patch(before, after)
    assert cc.apply_merge_patch(before, patch) == after
    assert (patch == {}) is (before == after)


def test_desired_spec_merge_and_replace():
    existing = {"logging": {"enabled": False, "logsidecar": {"enabled": True}}, "devops": {"enabled": True}}
    given = {"logging": {"enabled": True}, "devops": None}
    assert cc.desired_spec(existing, given, "merge") == {"logging": {"enabled": True, "logsidecar": {"enabled": True}}}
    assert cc.desired_spec(existing, {"logging": {"enabled": True}}, "replace") == {"logging": {"enabled": True}}
    assert cc.desired_spec(None, None, "merge") == {}
    with pytest.raises(ValueError):
        cc.desired_spec(existing, given, "strategic")


def test_select_cluster_configuration_from_an_installer_bundle():
    documents = [{"kind": "CustomResourceDefinition"}, None, {"kind": "Namespace"}, published(V332)]
    assert cc.select_cluster_configuration(documents)["metadata"]["labels"] == {"version": "v3.3.2"}
    with pytest.raises(ValueError, match="no document of kind ClusterConfiguration"):
        cc.select_cluster_configuration([{"kind": "Namespace"}])
    with pytest.raises(ValueError, match="2 documents"):
        cc.select_cluster_configuration([published(V332), published(V341)])


@pytest.mark.parametrize("definition, problems", [
    ({"spec": {}}, []),
    ({"apiVersion": "installer.kubesphere.io/v1alpha1", "kind": "ClusterConfiguration",
      "metadata": {"name": "ks-installer", "namespace": "kubesphere-system", "labels": {"version": "v3.4.1"}}}, []),
    ({"apiVersion": "v1"}, ["apiVersion is v1"]),
    ({"kind": "ConfigMap"}, ["kind is ConfigMap"]),
    ({"metadata": {"name": "other"}}, ["metadata.name is other, but this task manages ks-installer"]),
    ({"metadata": {"namespace": "default"}}, ["metadata.namespace is default"]),
    ({"metadata": {"labels": ["a"]}}, ["metadata.labels is not a mapping"]),
    ({"metadata": "x"}, ["metadata is not a mapping"]),
    ({"spec": ["a"]}, ["spec is not a mapping"]),
    ("text", ["the definition is not a mapping"]),
])
def test_check_definition(definition, problems):
    found = cc.check_definition(definition, "ks-installer", "kubesphere-system")
    assert len(found) == len(problems)
    for problem, expected in zip(found, problems):
        assert problem.startswith(expected)


# --- settings every component is made from -------------------------------------------------

EVERYTHING_ON = {"alerting": {"enabled": True}, "events": {"enabled": True, "ruler": {"enabled": True}},
                 "logging": {"enabled": True}, "metrics_server": {"enabled": True}}


@pytest.mark.parametrize("edit", [
    {"local_registry": "registry.example:5000"},
    {"namespace_override": "mirror"},
    {"persistence": {"storageClass": "fast"}},
])
def test_image_and_storage_settings_reapply_every_installed_component(edit):
    on = actions(EVERYTHING_ON)["install"]
    status = installed(EVERYTHING_ON, on)
    assert actions(EVERYTHING_ON, status)["reapply"] == []
    assert actions(cc.apply_merge_patch(EVERYTHING_ON, edit), status)["reapply"] == on


@pytest.mark.parametrize("edit", [{"dev_tag": "v3.4.1-patch1"}, {"terminal": {"timeout": 1200}}])
def test_core_only_settings_reapply_core_only(edit):
    on = actions(EVERYTHING_ON)["install"]
    status = installed(EVERYTHING_ON, on)
    assert actions(cc.apply_merge_patch(EVERYTHING_ON, edit), status)["reapply"] == ["core"]


@pytest.mark.parametrize("blank", [{"local_registry": ""}, {"namespace_override": None}, {"persistence": {}}])
def test_blank_shared_settings_count_as_unset_outside_core(blank):
    on = actions(EVERYTHING_ON)["install"]
    status = installed(EVERYTHING_ON, on)
    assert set(actions(cc.apply_merge_patch(EVERYTHING_ON, blank), status)["reapply"]) <= {"core"}
