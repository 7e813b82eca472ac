"""playbooks/upgrade.yml's serial plays: which nodes go together, and in which order.

A play's ``serial`` is templated without a host, so an inventory variable is not seen there: the play reads the
batch the first play decided (``upgrade_plan.worker_batch`` on the first control plane). The groups of nodes to do
are made by group_by, which lists hosts in the order their results came back; the plays take them in the
inventory's order, so that the first control plane (which runs ``kubeadm upgrade apply``) goes before the others.
These run the plays' real ``hosts`` and ``serial``, copied from upgrade.yml, on local hosts.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import ROOT, run

UPGRADE = ROOT / "playbooks" / "upgrade.yml"


def _upgrade_play(name: str) -> dict:
    plays = yaml.safe_load(UPGRADE.read_text())
    return next(play for play in plays if play.get("name") == name)


def _workers_play() -> dict:
    return _upgrade_play("Upgrade the workers, upgrade_worker_batch at a time")


def _control_planes_play() -> dict:
    return _upgrade_play("Upgrade the control planes, one at a time")


def _batches(tmp_path: Path, tool, inventory: str, extra: list[str]) -> list[list[str]]:
    (tmp_path / "hosts.ini").write_text(inventory)
    playbook = [
        {
            "name": "Decide the plan as upgrade.yml's first play does, from each host's upgrade_worker_batch",
            "hosts": "all",
            "gather_facts": False,
            "tasks": [{
                "name": "The plan",
                "ansible.builtin.set_fact": {
                    "upgrade_plan": "{{ {'worker_batch': upgrade_worker_batch | default(1) | int} }}",
                },
                "run_once": True,
            }, {
                "name": "Group the workers",
                "ansible.builtin.group_by": {"key": "slipway_upgrade_workers"},
                "when": "inventory_hostname in groups['kube_node']",
            }],
        },
        {
            "name": "The workers' play of upgrade.yml",
            "hosts": _workers_play()["hosts"],
            "gather_facts": False,
            "serial": _workers_play()["serial"],
            "tasks": [{
                "name": "Show the batch",
                "ansible.builtin.debug": {"msg": "{{ ansible_play_batch }}"},
            }],
        },
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    result = run([tool("ansible-playbook"), "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml"), *extra],
                 env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"})
    assert result.returncode == 0, result.stdout + result.stderr
    # The json callback's report, between the lines ansible.cfg's profile_tasks callback prints around it.
    text = result.stdout
    report = json.loads(text[text.index("{\n"):text.rindex("\n}") + 2])
    # One play entry per batch of the workers' play, each with the hosts of its batch.
    return [sorted(play["tasks"][0]["hosts"]) for play in report["plays"] if play["play"]["name"] == "The workers' play of upgrade.yml"]


def _sizes(batches: list[list[str]]) -> list[int]:
    """The batch sizes, once every worker is in exactly one batch (group_by lists hosts as they finish, in any order)."""
    assert sorted(host for batch in batches for host in batch) == WORKERS
    return [len(batch) for batch in batches]


def _inventory(control_planes: list[str], workers: list[str], extra: str = "") -> str:
    """An INI inventory of local hosts."""
    return "\n".join(["[kube_control_plane]", *control_planes, "[kube_node]", *workers, "[all:vars]",
                      "ansible_connection=local", f"ansible_python_interpreter={ROOT / '.venv' / 'bin' / 'python'}",
                      extra, ""])


WORKERS = ["w1", "w2", "w3", "w4", "w5"]


def test_the_workers_play_takes_the_batch_from_the_inventory(tmp_path, tool):
    inventory = _inventory(["cp1"], WORKERS, "upgrade_worker_batch=2")
    assert _sizes(_batches(tmp_path, tool, inventory, [])) == [2, 2, 1]


def test_the_workers_play_takes_the_batch_from_extra_vars(tmp_path, tool):
    inventory = _inventory(["cp1"], WORKERS)
    assert _sizes(_batches(tmp_path, tool, inventory, ["-e", "upgrade_worker_batch=3"])) == [3, 2]


def test_without_a_batch_the_workers_go_one_at_a_time(tmp_path, tool):
    inventory = _inventory(["cp1"], WORKERS)
    assert _sizes(_batches(tmp_path, tool, inventory, [])) == [1, 1, 1, 1, 1]


def test_the_nodes_go_in_the_inventorys_order_whatever_order_the_groups_were_made_in(tmp_path, tool):
    inventory = _inventory(["cp1", "cp2", "cp3"], ["w1", "w2", "w3"])
    (tmp_path / "hosts.ini").write_text(inventory)
    # The groups of nodes to do, made in the reverse of the inventory's order (as group_by may, under load).
    playbook = [
        {
            "name": "Make the groups in reverse order",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [{
                "name": "Add the host to its group",
                "ansible.builtin.add_host": {"name": "{{ item.0 }}", "groups": "{{ item.1 }}"},
                "loop": [["w3", "slipway_upgrade_workers"], ["w2", "slipway_upgrade_workers"],
                         ["w1", "slipway_upgrade_workers"], ["cp3", "slipway_upgrade_control_planes"],
                         ["cp2", "slipway_upgrade_control_planes"], ["cp1", "slipway_upgrade_control_planes"]],
            }, {
                "name": "The plan's batch",
                "ansible.builtin.set_fact": {"upgrade_plan": {"worker_batch": 1}},
                "delegate_to": "cp1",
                "delegate_facts": True,
            }],
        },
    ]
    for play in (_control_planes_play(), _workers_play()):
        playbook.append({
            "name": play["name"],
            "hosts": play["hosts"],
            "gather_facts": False,
            "serial": play["serial"],
            "tasks": [{"name": "Show the batch", "ansible.builtin.debug": {"msg": "{{ ansible_play_batch }}"}}],
        })
    (tmp_path / "play.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    result = run([tool("ansible-playbook"), "-i", str(tmp_path / "hosts.ini"), str(tmp_path / "play.yml")],
                 env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"})
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    report = json.loads(text[text.index("{\n"):text.rindex("\n}") + 2])
    order = [host for play in report["plays"][1:] for host in play["tasks"][0]["hosts"]]
    assert order == ["cp1", "cp2", "cp3", "w1", "w2", "w3"]
