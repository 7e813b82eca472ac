# Unit tests of the node-state filters (plugins/filter/node_state.py) against what slipway.cluster.node_facts reads
# from real files: a rerun may skip a write only when the node holds exactly what the task would write.
from __future__ import annotations

import grp
import os
import pwd

import pytest

from ansible_collections.slipway.cluster.plugins.filter.node_state import (
    block_current,
    files_current,
    kernel_modules_current,
)
from ansible_collections.slipway.cluster.plugins.modules.node_facts import block_states, path_states

OWNER = pwd.getpwuid(os.getuid())[0]
GROUP = grp.getgrgid(os.getgid())[0]


@pytest.fixture
def tree(tmp_path):
    conf = tmp_path / "etc" / "app.conf"
    conf.parent.mkdir(mode=0o700)
    conf.parent.chmod(0o700)
    conf.write_text("key = value\n")
    conf.chmod(0o600)
    return tmp_path


def facts_of(*paths):
    return {"files": path_states([str(path) for path in paths])}


def spec(tree, content="key = value\n", mode="0600"):
    return [{"path": str(tree / "etc" / "app.conf"), "content": content, "mode": mode}]


def directories(tree, mode="0700"):
    return [{"path": str(tree / "etc"), "mode": mode}]


def test_a_file_and_directory_as_they_would_be_written_are_current(tree):
    facts = facts_of(tree / "etc", tree / "etc" / "app.conf")
    assert files_current(facts, files=spec(tree), directories=directories(tree), owner=OWNER, group=GROUP)


@pytest.mark.parametrize("change", [
    {"content": "key = other\n"},
    {"content": "key = value"},
    {"mode": "0644"},
    {"dir_mode": "0755"},
    {"owner": "nobody-else"},
])
def test_any_difference_makes_the_task_run(tree, change):
    facts = facts_of(tree / "etc", tree / "etc" / "app.conf")
    files = spec(tree, content=change.get("content", "key = value\n"), mode=change.get("mode", "0600"))
    assert not files_current(facts, files=files, directories=directories(tree, change.get("dir_mode", "0700")),
                             owner=change.get("owner", OWNER), group=GROUP)


def test_a_path_not_read_or_missing_makes_the_task_run(tree):
    assert not files_current(facts_of(tree / "etc"), files=spec(tree), owner=OWNER, group=GROUP)
    missing = [{"path": str(tree / "etc" / "new.conf"), "content": "x"}]
    assert not files_current(facts_of(tree / "etc" / "new.conf"), files=missing, owner=OWNER, group=GROUP)
    assert path_states([str(tree / "etc" / "new.conf")]) == {}


@pytest.mark.parametrize("facts", [{}, None, {"files": None}, {"kernel_modules": {}}])
def test_facts_without_files_never_skip(facts, tree):
    assert not files_current(facts, files=spec(tree), owner=OWNER, group=GROUP)


def test_a_file_whose_source_holds_the_same_content_is_current(tree):
    source = tree / "etc" / "source.conf"
    source.write_text("key = value\n")
    facts = facts_of(tree / "etc" / "app.conf", source)
    files = [{"path": str(tree / "etc" / "app.conf"), "src": str(source), "mode": "0600"}]
    assert files_current(facts, files=files, owner=OWNER, group=GROUP)
    source.write_text("key = changed\n")
    assert not files_current(facts_of(tree / "etc" / "app.conf", source), files=files, owner=OWNER, group=GROUP)


def test_a_directory_where_a_file_goes_is_not_current(tree):
    facts = facts_of(tree / "etc")
    assert not files_current(facts, files=[{"path": str(tree / "etc"), "content": ""}], owner=OWNER, group=GROUP)
    assert not files_current(facts_of(tree / "etc" / "app.conf"), directories=[str(tree / "etc" / "app.conf")],
                             owner=OWNER, group=GROUP)


def test_the_default_modes_are_those_of_the_files_module(tree):
    (tree / "etc" / "app.conf").chmod(0o644)
    (tree / "etc").chmod(0o755)
    facts = facts_of(tree / "etc", tree / "etc" / "app.conf")
    files = [{"path": str(tree / "etc" / "app.conf"), "content": "key = value\n"}]
    assert files_current(facts, files=files, directories=[str(tree / "etc")], owner=OWNER, group=GROUP)


MARKER = "# {mark} slipway.cluster nodes"


@pytest.mark.parametrize("block", ["10.0.0.11 cp1\n10.0.0.12 cp2\n", "10.0.0.11 cp1\n10.0.0.12 cp2"])
def test_the_same_block_between_the_markers_is_current(tmp_path, block):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n# BEGIN slipway.cluster nodes\n10.0.0.11 cp1\n10.0.0.12 cp2\n"
                     "# END slipway.cluster nodes\n::1 localhost\n")
    facts = {"blocks": block_states([{"path": str(hosts), "marker": MARKER}])}
    assert block_current(facts, str(hosts), MARKER, block)
    assert not block_current(facts, str(hosts), MARKER, "10.0.0.11 cp1\n")
    assert not block_current(facts, str(hosts), "# {mark} other", block)


@pytest.mark.parametrize("text", [
    "127.0.0.1 localhost\n",
    "# BEGIN slipway.cluster nodes\n10.0.0.11 cp1\n",
    "# END slipway.cluster nodes\n10.0.0.11 cp1\n# BEGIN slipway.cluster nodes\n",
    "# BEGIN slipway.cluster nodes\n10.0.0.11 cp1\n# END slipway.cluster nodes\n"
    "# BEGIN slipway.cluster nodes\n10.0.0.11 cp1\n# END slipway.cluster nodes\n",
])
def test_a_file_without_one_whole_block_is_not_current(tmp_path, text):
    hosts = tmp_path / "hosts"
    hosts.write_text(text)
    facts = {"blocks": block_states([{"path": str(hosts), "marker": MARKER}, {"path": str(tmp_path / "none"),
                                                                              "marker": MARKER}])}
    assert facts == {"blocks": {}}
    assert not block_current(facts, str(hosts), MARKER, "10.0.0.11 cp1")


def test_kernel_modules_loaded_and_listed_for_boot_are_current(tmp_path):
    boot = tmp_path / "slipway.conf"
    boot.write_text("br_netfilter\n")
    facts = {"kernel_modules": {"overlay": "builtin", "br_netfilter": "loaded"}, "files": path_states([str(boot)])}
    assert kernel_modules_current(facts, ["overlay", "br_netfilter"], str(boot))
    boot.write_text("br_netfilter\noverlay\n")
    facts["files"] = path_states([str(boot)])
    assert not kernel_modules_current(facts, ["overlay", "br_netfilter"], str(boot))


@pytest.mark.parametrize("states", [
    {"overlay": "builtin", "br_netfilter": "available"},
    {"overlay": "builtin", "br_netfilter": "missing"},
    {"overlay": "builtin"},
])
def test_a_module_not_loaded_or_not_read_makes_the_task_run(tmp_path, states):
    boot = tmp_path / "slipway.conf"
    boot.write_text("br_netfilter\n")
    facts = {"kernel_modules": states, "files": path_states([str(boot)])}
    assert not kernel_modules_current(facts, ["overlay", "br_netfilter"], str(boot))


def test_only_built_in_modules_need_no_boot_file(tmp_path):
    boot = tmp_path / "slipway.conf"
    facts = {"kernel_modules": {"overlay": "builtin"}, "files": path_states([str(boot)])}
    assert kernel_modules_current(facts, ["overlay"], str(boot))
    boot.write_text("overlay\n")
    facts["files"] = path_states([str(boot)])
    assert not kernel_modules_current(facts, ["overlay"], str(boot))


def test_a_file_without_content_is_judged_by_its_attributes_only(tree):
    facts = facts_of(tree / "etc" / "app.conf")
    attributes_only = [{"path": str(tree / "etc" / "app.conf"), "mode": "0600"}]
    assert files_current(facts, files=attributes_only, owner=OWNER, group=GROUP)
    assert not files_current(facts, files=[{"path": str(tree / "etc" / "app.conf"), "mode": "0644"}],
                             owner=OWNER, group=GROUP)
    assert not files_current(facts_of(tree / "etc" / "none.conf"), files=[{"path": str(tree / "etc" / "none.conf")}],
                             owner=OWNER, group=GROUP)
