# Unit tests of the slipway.cluster.kubectl_apply module: arguments, check mode, diff mode, failures.
from __future__ import annotations

import pytest

from ansible.module_utils import basic

from ansible_collections.slipway.cluster.plugins.modules import kubectl_apply
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import _exit_json, _fail_json, run_main


@pytest.fixture
def kubectl(monkeypatch):
    """A fake kubectl behind AnsibleModule.run_command; set .diff / .apply to (rc, out, err)."""

    class Fake:
        diff = (1, "-a\n+b\n", "")
        apply = (0, "configmap/coredns serverside-applied\n", "")
        calls: list = []

    def run_command(self, argv, **kwargs):
        Fake.calls.append(argv)
        return Fake.diff if argv[3 if "--kubeconfig" in argv else 1] == "diff" else Fake.apply

    Fake.calls = []
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, **kw: f"/usr/local/bin/{name}")
    return Fake


def call(args):
    return run_main(kubectl_apply.main, args)


def test_applies_and_shows_the_diff(kubectl):
    kind, result = call({"src": "/tmp/cm.yml", "force_conflicts": True, "_ansible_diff": True})
    assert kind == "exit"
    assert (result["changed"], result["state"]) == (True, "different")
    assert result["applied"] == ["configmap/coredns serverside-applied"]
    assert result["diff"] == {"prepared": "-a\n+b\n"}
    assert kubectl.calls[1] == ["/usr/local/bin/kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf", "apply",
                                "--server-side", "--field-manager=slipway", "--force-conflicts", "-f", "/tmp/cm.yml"]


def test_check_mode_changes_nothing(kubectl):
    kind, result = call({"src": "/tmp/cm.yml", "_ansible_check_mode": True})
    assert (kind, result["changed"], result["applied"], len(kubectl.calls)) == ("exit", True, [], 1)
    assert "diff" not in result


def test_nothing_to_do(kubectl):
    kubectl.diff = (0, "", "")
    kind, result = call({"src": "/tmp/cm.yml", "_ansible_diff": True, "kubeconfig": "", "kubectl": "/opt/kubectl"})
    assert (kind, result["changed"], result["state"], "diff" in result) == ("exit", False, "same", False)
    assert kubectl.calls == [["/opt/kubectl", "diff", "--server-side", "--field-manager=slipway", "-f", "/tmp/cm.yml"]]


def test_kubectl_errors_fail_the_task(kubectl):
    kubectl.diff = (2, "", "error: the server doesn't have a resource type")
    kind, result = call({"src": "/tmp/cm.yml"})
    assert kind == "fail"
    assert "kubectl diff failed (exit 2)" in result["msg"]
