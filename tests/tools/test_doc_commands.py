"""Tests of tools/doc_commands.py, and that the scenarios run every day-2 command README.md and docs/ show, as written."""

import functools
import importlib.util
import os
from pathlib import Path

import pytest
import yaml

import doc_commands

ROOT = Path(__file__).resolve().parents[2]

# The playbooks whose every documented form a scenario runs exactly as written (issue: "at least the day-2 ones").
DAY2 = ("scale", "remove_node", "upgrade", "certs", "etcd_backup", "etcd_restore", "recover_control_plane",
        "rotate_encryption_key", "operator", "kubesphere", "reset")

MARKDOWN = """\
Run `ansible-playbook playbooks/certs.yml -i INVENTORY [-e certs_action=renew]` to check.
The word `ansible-playbook` alone is no command.

```sh
.venv/bin/ansible-playbook -i inventories/lab/hosts.yml playbooks/etcd_restore.yml \\
  -e etcd_snapshot=inventories/lab/backups/etcd-<cluster>-<time>.db   # restore
ansible-playbook playbooks/remove_node.yml -i inventories/mycluster/hosts.yml -e remove_node_names=w3[,w4]
```
"""


def test_commands_are_read_from_code_spans_and_blocks_with_both_forms_of_an_optional_part():
    found = doc_commands.commands_in(MARKDOWN, "x.md")
    assert [(c.source, c.text) for c in found] == [
        ("x.md:1", "ansible-playbook playbooks/certs.yml -i INVENTORY"),
        ("x.md:1", "ansible-playbook playbooks/certs.yml -i INVENTORY -e certs_action=renew"),
        ("x.md:5", ".venv/bin/ansible-playbook -i inventories/lab/hosts.yml playbooks/etcd_restore.yml "
                   "-e etcd_snapshot=inventories/lab/backups/etcd-<cluster>-<time>.db"),
        ("x.md:7", "ansible-playbook playbooks/remove_node.yml -i inventories/mycluster/hosts.yml -e remove_node_names=w3"),
    ]


def test_a_form_is_the_playbook_and_the_option_names_whatever_their_order_and_values():
    one = doc_commands.Command("a", "ansible-playbook -i inventories/lab/hosts.yml playbooks/upgrade.yml -e slipway_kubernetes_version=1.37.1")
    two = doc_commands.Command("b", "ansible-playbook playbooks/upgrade.yml -i INVENTORY -e slipway_kubernetes_version=1.37.2")
    assert one.form == two.form == "playbooks/upgrade.yml -e slipway_kubernetes_version -i"
    assert one.playbook == "playbooks/upgrade.yml"


def test_fill_puts_the_lab_values_in_the_placeholders_and_keeps_literal_values():
    text = "ansible-playbook playbooks/etcd_restore.yml -i INVENTORY -e etcd_snapshot=FILE -e certs_action=renew"
    argv = doc_commands.fill(text, ".cache/scenario-inventories/lifecycle", {"etcd_snapshot": "backups/x.db"})
    assert argv == ["ansible-playbook", "playbooks/etcd_restore.yml", "-i", ".cache/scenario-inventories/lifecycle",
                    "-e", "etcd_snapshot=backups/x.db", "-e", "certs_action=renew"]


@pytest.mark.parametrize("text, missing", [
    ("ansible-playbook playbooks/etcd_restore.yml -i INVENTORY -e etcd_snapshot=FILE", "etcd_snapshot"),
    ("ansible-playbook playbooks/scale.yml -i INVENTORY --limit NEW", "--limit"),
    ("ansible-playbook playbooks/kubesphere.yml -e kubesphere_kubeconfig=~/.kube/config", "kubesphere_kubeconfig"),
])
def test_an_unfilled_placeholder_is_an_error(text, missing):
    with pytest.raises(doc_commands.CommandError, match=missing):
        doc_commands.fill(text, "inv", {})


@functools.lru_cache(maxsize=1)
def _documented_steps():
    """Every step_documented of the scenarios: (file, text)."""
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "step_documented":
                    found.append((where, value))
                else:
                    walk(value, where)
        elif isinstance(node, list):
            for item in node:
                walk(item, where)

    for path in sorted((ROOT / "molecule").rglob("*.yml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            walk(document, str(path.relative_to(ROOT)))
    return tuple(found)


def test_every_scenario_step_runs_a_command_exactly_as_the_docs_show_it():
    shown = {command.text for command in doc_commands.documented_commands(ROOT)}
    steps = _documented_steps()
    assert steps
    assert [(where, text) for where, text in steps if text not in shown] == []


@pytest.mark.parametrize("form", sorted({
    command.form for command in doc_commands.documented_commands(ROOT)
    if os.path.splitext(os.path.basename(command.playbook))[0] in DAY2}))
def test_every_documented_form_of_a_day2_playbook_is_run_by_a_scenario(form):
    run = {doc_commands.Command(where, text).form for where, text in _documented_steps()}
    assert form in run, f"no scenario step runs `{form}` as README.md or docs/ write it (molecule/*: step_documented)"


def test_every_day2_playbook_has_a_documented_command():
    playbooks = {os.path.splitext(os.path.basename(c.playbook))[0] for c in doc_commands.documented_commands(ROOT)}
    assert sorted(set(DAY2) - playbooks) == []


def test_stage_runs_a_documented_command_from_the_root_with_relative_paths(tmp_path):
    spec = importlib.util.spec_from_file_location("stage", ROOT / "molecule" / "resources" / "files" / "stage.py")
    stage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stage)
    inventory = tmp_path / "docscenario" / "inventory"
    (inventory / "backups").mkdir(parents=True)
    argv = stage.documented_argv(
        ".venv/bin/ansible-playbook -i inventories/lab/hosts.yml playbooks/etcd_restore.yml "
        "-e etcd_snapshot=inventories/lab/backups/etcd-<cluster>-<time>.db",
        [f"etcd_snapshot={inventory}/backups/etcd-lab-1.db"], inventory)
    link = ROOT / ".cache" / "scenario-inventories" / "docscenario"
    try:
        assert argv == [".venv/bin/ansible-playbook", "-i", ".cache/scenario-inventories/docscenario",
                        "playbooks/etcd_restore.yml", "-e", "etcd_snapshot=.cache/scenario-inventories/docscenario/backups/etcd-lab-1.db"]
        assert link.resolve() == inventory.resolve()
        with pytest.raises(SystemExit, match="not a command README.md or docs/ show"):
            stage.documented_argv("ansible-playbook playbooks/scale.yml -i INVENTORY -e made_up=1", [], inventory)
    finally:
        link.unlink()
