# Unit tests of slipway.cluster.component_status against an in-memory API server: the record it
# writes, where it writes it (status subresource or not), idempotence, check mode and diff.
from __future__ import annotations

import datetime
import os

import pytest
import yaml

from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration as cc
from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration_runner as runner
from ansible_collections.slipway.cluster.plugins.modules import component_status
from ansible_collections.slipway.cluster.tests.unit.fixtures.kube_api import FakeApiServer
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import Runner

ITEM = "/apis/installer.kubesphere.io/v1alpha1/namespaces/kubesphere-system/clusterconfigurations/ks-installer"
SPEC = {"logging": {"enabled": True, "logsidecar": {"enabled": True}},
        "events": {"enabled": True, "ruler": {"enabled": True}}}
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")


def run(monkeypatch, server, args, **kwargs):
    return Runner(monkeypatch, server).run(component_status, args, **kwargs)


def is_rfc3339_utc(value):
    parsed = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    return abs((datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - parsed).total_seconds()) < 60


@pytest.mark.parametrize("subresource", [True, False])
def test_enabled_is_recorded_once(monkeypatch, subresource):
    server = FakeApiServer(obj={"spec": SPEC}, status_subresource=subresource)
    kind, result = run(monkeypatch, server, {"component": "logging", "status": "enabled"}, diff=True)
    assert kind == "exit", result
    digest = cc.spec_hash(SPEC, cc.COMPONENTS["logging"])
    entry = server.stored()["status"]["logging"]
    assert entry == result["entry"]
    assert entry["status"] == "enabled"
    assert is_rfc3339_utc(entry["enabledTime"])
    assert entry["slipway"] == {"specHash": digest}
    assert (result["changed"], result["spec_hash"], result["status_subresource"]) == (True, digest, subresource)
    assert (result["status_path"], result["previous"]) == ("status.logging", None)
    assert result["diff"] == {"before": {}, "after": entry, "before_header": "status.logging", "after_header": "status.logging"}
    method, path, body, content_type = server.writes()[0]
    assert path == (ITEM + "/status" if subresource else ITEM)
    assert (method, content_type) == ("patch", "application/merge-patch+json")
    assert body == {"status": {"logging": {"status": "enabled", "enabledTime": entry["enabledTime"],
                                           "slipway": {"specHash": digest, "reason": None}}}}
    assert server.stored()["metadata"]["generation"] == (1 if subresource else 2)

    kind, again = run(monkeypatch, server, {"component": "logging", "status": "enabled"})
    assert (kind, again["changed"]) == ("exit", False)
    assert again["entry"]["enabledTime"] == entry["enabledTime"]
    assert len(server.writes()) == 1


def test_nested_component_keeps_the_parent_entry(monkeypatch):
    parent = {"status": "enabled", "enabledTime": "2023-06-21T12:23:47CST"}
    server = FakeApiServer(obj={"spec": SPEC, "status": {"events": dict(parent)}})
    kind, result = run(monkeypatch, server, {"component": "events.ruler", "status": "enabled"})
    assert kind == "exit", result
    events = server.stored()["status"]["events"]
    assert {key: events[key] for key in ("status", "enabledTime")} == parent
    assert events["ruler"]["status"] == "enabled"
    assert result["status_path"] == "status.events.ruler"
    assert result["spec_hash"] == cc.spec_hash(SPEC, cc.COMPONENTS["events.ruler"])


def test_common_components_use_ks_installers_flat_keys(monkeypatch):
    server = FakeApiServer(obj={"spec": {"devops": {"enabled": True}}})
    kind, result = run(monkeypatch, server, {"component": "common.openldap", "status": "enabled"})
    assert kind == "exit", result
    assert server.stored()["status"]["openldap"]["status"] == "enabled"
    kind, result = run(monkeypatch, server, {"component": "metrics_server", "status": "enabled"})
    assert server.stored()["status"]["metricsServer"]["status"] == "enabled"


def test_failed_then_retried(monkeypatch):
    server = FakeApiServer(obj={"spec": SPEC})
    kind, result = run(monkeypatch, server, {"component": "logging", "status": "failed", "reason": "helm timed out"})
    assert kind == "exit", result
    assert server.stored()["status"]["logging"]["slipway"]["reason"] == "helm timed out"
    plan = {e["name"]: e for e in cc.plan(server.stored()["spec"], server.stored()["status"])}
    assert plan["logging"]["action"] == "install"
    assert "helm timed out" in plan["logging"]["reason"]
    kind, same = run(monkeypatch, server, {"component": "logging", "status": "failed", "reason": "helm timed out"})
    assert same["changed"] is False
    kind, result = run(monkeypatch, server, {"component": "logging", "status": "enabled"})
    assert result["changed"] is True
    assert server.stored()["status"]["logging"]["slipway"] == {"specHash": result["spec_hash"]}
    assert result["previous"]["status"] == "failed"


def test_failed_needs_a_reason(monkeypatch):
    server = FakeApiServer(obj={"spec": SPEC})
    kind, result = run(monkeypatch, server, {"component": "logging", "status": "failed"})
    assert kind == "fail"
    assert "status is failed but all of the following are missing: reason" in result["msg"]
    kind, result = run(monkeypatch, server, {"component": "logging", "status": "failed", "reason": "  "})
    assert kind == "fail"
    assert "needs a reason" in result["msg"]
    assert server.writes() == []


def test_disabled_has_no_hash_and_stays_put(monkeypatch):
    spec = {"devops": {"enabled": False}}
    status = {"devops": {"status": "enabled", "enabledTime": "2024-05-01T10:00:00Z", "slipway": {"specHash": "h"}}}
    server = FakeApiServer(obj={"spec": spec, "status": status})
    kind, result = run(monkeypatch, server, {"component": "devops", "status": "disabled"})
    assert kind == "exit", result
    assert result["spec_hash"] is None
    assert server.stored()["status"]["devops"]["slipway"] == {}
    server.put(dict(server.stored(), spec={"devops": {"enabled": False, "jenkinsMemoryLim": "8Gi"}}))
    kind, again = run(monkeypatch, server, {"component": "devops", "status": "disabled"})
    assert again["changed"] is False


def test_ks_installer_entry_is_adopted_keeping_its_keys(monkeypatch):
    status = yaml.safe_load(open(os.path.join(FIXTURES, "ks-installer-v3.3-status.yaml"), encoding="utf-8"))
    server = FakeApiServer(obj={"spec": {}, "status": status}, status_subresource=False)
    kind, result = run(monkeypatch, server, {"component": "core", "status": "enabled"})
    assert kind == "exit", result
    assert result["changed"] is True
    core = server.stored()["status"]["core"]
    assert core["version"] == "v3.3.2"
    assert core["slipway"]["specHash"] == cc.spec_hash({}, cc.COMPONENTS["core"])
    assert server.stored()["status"]["clusterId"] == status["clusterId"]
    kind, again = run(monkeypatch, server, {"component": "core", "status": "enabled"})
    assert again["changed"] is False


def test_spec_hash_from_the_plan_is_recorded_as_given(monkeypatch):
    server = FakeApiServer(obj={"spec": SPEC})
    kind, result = run(monkeypatch, server, {"component": "logging", "status": "enabled", "spec_hash": "abc"})
    assert kind == "exit", result
    assert server.stored()["status"]["logging"]["slipway"]["specHash"] == "abc"
    plan = {e["name"]: e for e in cc.plan(SPEC, server.stored()["status"])}
    assert plan["logging"]["action"] == "reapply"


def test_check_mode_predicts_without_writing(monkeypatch):
    server = FakeApiServer(obj={"spec": SPEC, "status": {"logging": {"status": "failed", "slipway": {"reason": "x"}}}})
    kind, result = run(monkeypatch, server, {"component": "logging", "status": "enabled"}, check_mode=True, diff=True)
    assert kind == "exit", result
    assert result["changed"] is True
    assert result["entry"]["status"] == "enabled"
    assert result["entry"]["slipway"] == {"specHash": result["spec_hash"]}
    assert result["diff"]["before"] == {"status": "failed", "slipway": {"reason": "x"}}
    assert server.writes() == []


def test_resource_must_exist(monkeypatch):
    kind, result = run(monkeypatch, FakeApiServer(), {"component": "core", "status": "enabled"})
    assert kind == "fail"
    assert "does not exist: create it first" in result["msg"]


def test_crd_must_be_installed(monkeypatch):
    kind, result = run(monkeypatch, FakeApiServer(served=False), {"component": "core", "status": "enabled"})
    assert kind == "fail"
    assert "install the ClusterConfiguration CRD first" in result["msg"]


def test_unknown_component_is_refused(monkeypatch):
    kind, result = run(monkeypatch, FakeApiServer(obj={"spec": {}}), {"component": "kubeedge", "status": "enabled"})
    assert kind == "fail"
    assert "value of component must be one of" in result["msg"]


def test_a_status_write_the_server_drops_is_an_error(monkeypatch):
    class Lying(FakeApiServer):
        """Serves a status subresource but leaves it out of discovery, as a stale view would."""

        def request(self, method, path, body=None, **params):
            if path == "/apis/installer.kubesphere.io/v1alpha1":
                listing = super().request(method, path, body, **params)
                listing["resources"] = [r for r in listing["resources"] if r["name"] != "clusterconfigurations/status"]
                return listing
            return super().request(method, path, body, **params)

    server = Lying(obj={"spec": {}}, status_subresource=True)
    kind, result = run(monkeypatch, server, {"component": "core", "status": "enabled"})
    assert kind == "fail"
    assert "did not keep it" in result["msg"]


def test_docs_list_every_component_and_option():
    documentation = yaml.safe_load(component_status.DOCUMENTATION)
    assert documentation["options"]["component"]["choices"] == list(cc.COMPONENT_NAMES)
    own = set(documentation["options"])
    assert own == set(runner.COMPONENT_STATUS_ARGS["argument_spec"]) - set(runner.AUTH_ARG_SPEC)
