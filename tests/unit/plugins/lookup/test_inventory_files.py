# Unit tests of the inventory files' check: a YAML error is named with its file, line and column.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.lookup.inventory_files import inventory_problems, yaml_problem

HOSTS = "all:\n  children:\n    kube_control_plane:\n      hosts:\n        cp1: {ansible_host: 192.0.2.11}\n"


@pytest.fixture(name="inventory")
def fixture_inventory(tmp_path):
    (tmp_path / "hosts.yml").write_text(HOSTS)
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "host_vars").mkdir()
    return tmp_path


@pytest.mark.parametrize("text, expected", [
    ("slipway_lb_mode: vip\nfoo: [a, b\nbar: 1\n", "line 3, column 4: expected ',' or ']', but got ':' (while parsing a "
     "flow sequence on line 2, column 6)"),
    ("a: 1\n b: 2\n", "line 2, column 3: mapping values are not allowed here"),
    ("a: 'open\n", "line 2, column 1: found unexpected end of stream (while scanning a quoted scalar on line 1, column 4)"),
    ("key:\n\t- tab\n", "line 2, column 1: found character '\\t' that cannot start any token"),
    ("- a\n- b\n", ": holds a list, not a mapping of variables; write variable: value lines"),
])
def test_a_yaml_error_is_named_with_its_file_line_and_column(text, expected):
    found = yaml_problem("group_vars/all.yml", text)
    assert found.startswith(f"group_vars/all.yml{'' if expected.startswith(':') else ' '}{expected}"), found


@pytest.mark.parametrize("text", [
    "", "# only a comment\n", "a: 1\n", '{"a": 1}\n',
    "secret: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\nraw: !unsafe '{{ x }}'\n",
    "$ANSIBLE_VAULT;1.1;AES256\n61626364\n",
])
def test_what_ansible_reads_passes(text):
    assert yaml_problem("group_vars/all.yml", text) is None


def test_every_broken_file_beside_the_inventory_and_the_playbook_is_named(inventory, tmp_path):
    (inventory / "group_vars" / "all" / "cluster.yml").write_text("a: [1\n")
    (inventory / "group_vars" / "all" / "fine.yml").write_text("b: 1\n")
    (inventory / "group_vars" / "kube_node").write_text("c: {\n")
    (inventory / "host_vars" / "cp1.json").write_text('{"d": 1\n')
    # Not read by Ansible: hidden files, editor backups, other extensions.
    (inventory / "group_vars" / ".hidden.yml").write_text("a: [\n")
    (inventory / "group_vars" / "all" / "cluster.yml~").write_text("a: [\n")
    playbooks = tmp_path / "playbooks"
    (playbooks / "group_vars").mkdir(parents=True)
    (playbooks / "group_vars" / "all.yaml").write_text("e: 'x\n")
    found = inventory_problems([str(inventory / "hosts.yml")], str(playbooks))
    assert sorted(problem.split(" ")[0].split(":")[0] for problem in found) == [
        str(inventory / "group_vars/all/cluster.yml"), str(inventory / "group_vars/kube_node"),
        str(inventory / "host_vars/cp1.json"), str(playbooks / "group_vars/all.yaml")]


def test_a_broken_yaml_inventory_source_is_named(inventory):
    (inventory / "hosts.yml").write_text(HOSTS + "  vars: [\n")
    found = inventory_problems([str(inventory)])
    assert len(found) == 1 and found[0].startswith(f"{inventory / 'hosts.yml'} line "), found


def test_host_lists_and_missing_sources_are_skipped(inventory):
    assert inventory_problems(["cp1,cp2", str(inventory / "nowhere.yml"), "/etc/nowhere"]) == []
    assert inventory_problems([str(inventory / "hosts.yml")], "") == []
