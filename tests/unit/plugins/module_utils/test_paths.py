# Unit tests of controller_path: a path typed on the command line is read against the directory the user ran
# ansible-playbook from, not the playbook's.
from __future__ import annotations

import os

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._paths import controller_path


@pytest.fixture(name="tree")
def fixture_tree(tmp_path):
    (tmp_path / "inventories" / "lab" / "backups").mkdir(parents=True)
    (tmp_path / "inventories" / "lab" / "backups" / "etcd-lab-1.db").write_text("x", encoding="utf-8")
    (tmp_path / "inventories" / "lab" / "bundle").mkdir()
    (tmp_path / "playbooks").mkdir()
    return tmp_path


def test_relative_is_read_against_the_users_directory(tree):
    got = controller_path("inventories/lab/backups/etcd-lab-1.db", cwd=str(tree))
    assert got == str(tree / "inventories" / "lab" / "backups" / "etcd-lab-1.db")


def test_relative_uses_this_process_directory_by_default(tree, monkeypatch):
    monkeypatch.chdir(tree)
    assert controller_path("inventories/lab/backups/etcd-lab-1.db") == str(tree / "inventories/lab/backups/etcd-lab-1.db")


def test_a_missing_file_is_named_against_the_users_directory(tree):
    assert controller_path("backups/missing.db", [str(tree / "inventories" / "lab")], cwd=str(tree)) \
        == str(tree / "backups" / "missing.db")


def test_fallback_directory_when_not_found_here(tree):
    # A bundle directory written relative to the inventory (as before) is still found.
    assert controller_path("bundle", [str(tree / "inventories" / "lab")], cwd=str(tree / "playbooks")) \
        == str(tree / "inventories" / "lab" / "bundle")


def test_the_users_directory_wins_over_a_fallback(tree):
    (tree / "bundle").mkdir()
    assert controller_path("bundle", [str(tree / "inventories" / "lab")], cwd=str(tree)) == str(tree / "bundle")


@pytest.mark.parametrize("given", ["", None])
def test_empty_stays_empty(given):
    assert controller_path(given) == ""


def test_absolute_is_normalised_only(tree):
    assert controller_path(f"{tree}/playbooks/../inventories", cwd="/elsewhere") == str(tree / "inventories")


def test_home_is_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert controller_path("~/.kube/config", cwd="/elsewhere") == os.path.join(str(tmp_path), ".kube", "config")
