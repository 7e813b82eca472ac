# Unit tests of slipway.cluster.cluster_configuration_info against an in-memory API server.
from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration as cc
from ansible_collections.slipway.cluster.plugins.modules import cluster_configuration_info
from ansible_collections.slipway.cluster.tests.unit.fixtures.kube_api import FakeApiServer
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import Runner

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")


def load(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def run(monkeypatch, server, args=None, **kwargs):
    return Runner(monkeypatch, server).run(cluster_configuration_info, args or {}, **kwargs)


def test_no_crd(monkeypatch):
    kind, result = run(monkeypatch, FakeApiServer(served=False))
    assert kind == "exit", result
    assert (result["crd_installed"], result["exists"], result["plan"], result["changed"]) == (False, False, [], False)
    assert result["actions"] == {"install": [], "reapply": [], "uninstall": [], "none": []}


def test_no_resource_yet(monkeypatch):
    kind, result = run(monkeypatch, FakeApiServer())
    assert (kind, result["crd_installed"], result["exists"], result["plan"]) == ("exit", True, False, [])
    assert result["generation"] is None


def test_plan_for_a_cluster_ks_installer_installed(monkeypatch):
    definition = load("ks-installer-v3.3.2-cluster-configuration.yaml")
    spec = cc.apply_merge_patch(definition["spec"], {"metrics_server": {"enabled": True}, "logging": {"enabled": True},
                                                     "events": {"enabled": True, "ruler": {"enabled": True}},
                                                     "devops": {"enabled": True}})
    status = load("ks-installer-v3.3-status.yaml")
    server = FakeApiServer(obj={"metadata": definition["metadata"], "spec": spec, "status": status}, status_subresource=False)
    kind, result = run(monkeypatch, server, check_mode=True)
    assert kind == "exit", result
    assert (result["exists"], result["status_subresource"], result["changed"]) == (True, False, False)
    assert result["labels"] == {"version": "v3.3.2"}
    assert result["spec"] == spec and result["status"] == status
    assert result["actions"]["install"] == ["common.openldap", "common.minio", "devops"]
    assert result["actions"]["reapply"] == result["actions"]["uninstall"] == []
    by_name = {entry["name"]: entry for entry in result["plan"]}
    assert by_name["core"]["recorded_by"] == "ks-installer"
    assert by_name["core"]["enabled_time"] == "2023-06-21T12:20:31CST"
    assert by_name["metrics_server"]["status_path"] == "status.metricsServer"
    assert by_name["logging.logsidecar"]["action"] == "none"
    assert [entry["name"] for entry in result["plan"]] == list(cc.COMPONENT_NAMES)
    assert server.writes() == []


def test_spec_option_plans_a_spec_not_stored_yet(monkeypatch):
    kind, result = run(monkeypatch, FakeApiServer(), {"spec": {"gatekeeper": {"enabled": True}}})
    assert kind == "exit", result
    assert result["exists"] is False
    assert result["actions"]["install"] == ["core", "monitoring", "gatekeeper"]


def test_spec_option_against_the_stored_status(monkeypatch):
    spec = {"gatekeeper": {"enabled": True}}
    status = {"gatekeeper": {"status": "enabled", "enabledTime": "2024-05-01T10:00:00Z",
                             "slipway": {"specHash": cc.spec_hash(spec, cc.COMPONENTS["gatekeeper"])}}}
    server = FakeApiServer(obj={"spec": spec, "status": status})
    kind, result = run(monkeypatch, server, {"spec": {"gatekeeper": {"enabled": False}}})
    assert kind == "exit", result
    assert result["actions"]["uninstall"] == ["gatekeeper"]
    kind, result = run(monkeypatch, server)
    assert result["actions"]["uninstall"] == []


@pytest.mark.parametrize("served", [True, False])
def test_api_errors_fail_the_module(monkeypatch, served):
    class Broken(FakeApiServer):
        def request(self, method, path, body=None, **params):
            if path.endswith("/ks-installer"):
                from ansible_collections.slipway.cluster.tests.unit.fixtures.kube_api import api_error
                raise api_error(403, "Forbidden", "clusterconfigurations is forbidden")
            return super().request(method, path, body, **params)

    kind, result = run(monkeypatch, Broken(served=served))
    if served:
        assert kind == "fail"
        assert result["api_status"] == 403
        assert "clusterconfigurations is forbidden" in result["msg"]
    else:
        assert kind == "exit"
        assert result["crd_installed"] is False


def test_docs_list_every_component_in_install_order_with_its_status_key():
    """The module's description names the catalogue's components (_cluster_configuration.CATALOGUE, their one home)
    in its order, each with ks-installer's status key where that is not its own name."""
    description = yaml.safe_load(cluster_configuration_info.DOCUMENTATION)["description"]
    listing = next(item for item in description if item.startswith("The components, with the status key"))
    named = re.findall(r"V\(([\w.]+)\)(?: \(C\(([\w.]+)\)\))?", listing)
    assert [name for name, _key in named] == list(cc.COMPONENT_NAMES)
    for name, key in named:
        status_key = ".".join(cc.COMPONENTS[name].status_path)
        assert (key or name) == status_key, f"{name}: status key {status_key}, the docs say {key or name}"
