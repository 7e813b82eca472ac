"""The day-2 playbooks' run-level checks (playbooks/inventory.yml, their shared first play): a missing inventory
or one without cluster hosts fails with a message; a kubespray inventory without k8s_cluster gets the group."""

from __future__ import annotations

import textwrap

import pytest

from conftest import ROOT, run
from test_preflight_playbook import stopped_before_contact

DAY2 = ["scale", "remove_node", "reset", "upgrade", "certs", "etcd_backup", "etcd_restore", "recover_control_plane",
        "kubesphere", "operator"]


@pytest.mark.parametrize("playbook", DAY2)
def test_a_day2_playbook_on_a_missing_inventory_fails_with_a_message(tmp_path, tool, playbook):
    missing = tmp_path / "nowhere" / "hosts.yml"
    output = stopped_before_contact(run([tool("ansible-playbook"), "-i", str(missing), str(ROOT / f"playbooks/{playbook}.yml")]))
    assert f"The inventory {missing} does not exist: pass the path of yours with -i" in output, output


@pytest.mark.parametrize("playbook", ["scale", "etcd_backup", "kubesphere"])
def test_a_day2_playbook_on_an_inventory_without_cluster_hosts_fails(tmp_path, tool, playbook):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    web1: {ansible_host: 192.0.2.5}\n")
    output = stopped_before_contact(run([tool("ansible-playbook"), "-i", str(inventory), str(ROOT / f"playbooks/{playbook}.yml")]))
    assert "has no host in kube_control_plane or kube_node" in output, output


KUBESPRAY_INVENTORY = textwrap.dedent("""\
    [kube_control_plane]
    node1 ansible_host=192.0.2.11 ip=192.0.2.11 etcd_member_name=etcd1

    [etcd:children]
    kube_control_plane

    [kube_node]
    node4 ansible_host=192.0.2.14 ip=192.0.2.14
    node5 ansible_host=192.0.2.15 ip=192.0.2.15
    """)


def test_scale_on_a_kubespray_inventory_without_k8s_cluster_gets_past_the_model(tmp_path, tool):
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(KUBESPRAY_INVENTORY)
    result = run([tool("ansible-playbook"), "-i", str(inventory), "-e", "ansible_port=1", str(ROOT / "playbooks/scale.yml")])
    output = stopped_before_contact(result)
    # k8s_cluster was made, so the model's check of it passed and the workers are in the first play.
    assert "(item=node4)" in output and "(item=node5)" in output, output
    assert "group k8s_cluster" not in output
    assert "problem(s)" not in output
    # It stops at the next check, the admin kubeconfig that site.yml would have put next to the inventory.
    assert f"{tmp_path}/artifacts/admin.conf is not there" in output


def test_operator_against_a_kubeconfig_needs_no_inventory_but_checks_its_settings(tmp_path, tool):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    result = run([tool("ansible-playbook"), str(ROOT / "playbooks/operator.yml"), "-e", f"operator_kubeconfig={kubeconfig}",
                  "-e", "operator_replicas=0", "-e", "operator_image_pull_policy=Sometimes"])
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "does not exist: pass the path" not in output
    assert "The settings have 2 problem(s); nothing was changed on any host" in output, output
    assert "operator_replicas: '0' is not a number of replicas" in output
    assert "operator_image_pull_policy: unknown value 'Sometimes'" in output
