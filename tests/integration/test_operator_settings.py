"""What slipway-operator gets as the inventory's settings: the options the kubesphere and metrics_server roles
declare, as the real Ansible evaluates roles/operator/vars/main.yml. A result a role registers under a public name
of the same prefix (kubesphere_plan) differs from run to run: passed on, it made every site.yml rerun change the
operator's Deployment (the kubesphere scenario's idempotence step caught it)."""

from __future__ import annotations

import json

import yaml
from conftest import ROOT, run


def test_only_declared_options_reach_the_operator(tmp_path, tool):
    playbook = tmp_path / "settings.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "vars": {
            "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "role_path": str(ROOT / "roles" / "operator"),
            "operator_kubesphere_vars": {},
            # an inventory's settings, one of each role, and one the operator keeps for itself
            "kubesphere_wait_timeout": 900,
            "metrics_server_replicas": 2,
            "kubesphere_reapply": True,
            # this run's results under the roles' prefixes, and a name no role declares
            "kubesphere_plan": {"apply": ["core"]},
            "metrics_server_objects": [{"kind": "Deployment"}],
            "kubesphere_misspelt_setting": 1,
        },
        "tasks": [
            {"ansible.builtin.include_vars": str(ROOT / "roles" / "operator" / "vars" / "main.yml")},
            {"ansible.builtin.copy": {"content": "{{ _operator_inventory_settings | to_json }}",
                                      "dest": str(tmp_path / "settings.json"), "mode": "0644"}},
        ]}]))
    result = run([tool("ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)])
    assert result.returncode == 0, result.stdout + result.stderr
    settings = json.loads((tmp_path / "settings.json").read_text())
    declared = yaml.safe_load((ROOT / "roles" / "kubesphere" / "meta" / "argument_specs.yml").read_text())
    assert "kubesphere_wait_timeout" in declared["argument_specs"]["main"]["options"]
    assert settings == {"kubesphere_wait_timeout": 900, "metrics_server_replicas": 2}
