"""playbooks/upgrade.yml's worker batches: the workers' play takes upgrade_worker_batch from the inventory.

A play's ``serial`` is templated without a host, so an inventory variable is not seen there: the play reads the
batch the first play decided (``_upgrade_plan.worker_batch`` on the first control plane). This runs the workers'
play's real ``serial`` expression, copied from upgrade.yml, on local hosts whose inventory sets the batch.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import ROOT, run

UPGRADE = ROOT / "playbooks" / "upgrade.yml"


def _workers_play() -> dict:
    plays = yaml.safe_load(UPGRADE.read_text())
    return next(play for play in plays if play.get("hosts") == "slipway_upgrade_workers")


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
                    "_upgrade_plan": "{{ {'worker_batch': upgrade_worker_batch | default(1) | int} }}",
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
            "hosts": "slipway_upgrade_workers",
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
    assert sorted(host for batch in batches for host in batch) == ["w1", "w2", "w3", "w4", "w5"]
    return [len(batch) for batch in batches]


INVENTORY = """
[kube_control_plane]
cp1
[kube_node]
w1
w2
w3
w4
w5
[all:vars]
ansible_connection=local
ansible_python_interpreter={python}
{extra}
"""


def test_the_workers_play_takes_the_batch_from_the_inventory(tmp_path, tool):
    inventory = INVENTORY.format(python=ROOT / ".venv" / "bin" / "python", extra="upgrade_worker_batch=2")
    assert _sizes(_batches(tmp_path, tool, inventory, [])) == [2, 2, 1]


def test_the_workers_play_takes_the_batch_from_extra_vars(tmp_path, tool):
    inventory = INVENTORY.format(python=ROOT / ".venv" / "bin" / "python", extra="")
    assert _sizes(_batches(tmp_path, tool, inventory, ["-e", "upgrade_worker_batch=3"])) == [3, 2]


def test_without_a_batch_the_workers_go_one_at_a_time(tmp_path, tool):
    inventory = INVENTORY.format(python=ROOT / ".venv" / "bin" / "python", extra="")
    assert _sizes(_batches(tmp_path, tool, inventory, [])) == [1, 1, 1, 1, 1]
