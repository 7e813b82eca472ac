# A task that is skipped still registers its variable: {skipped: true} replaces what an earlier task of the same
# name left. So within what one task file imports statically (import_tasks, through every level), a register name
# is written by one file only; a second writer in another imported file, skipped by its condition, would silently
# blank the first one's result (scale.yml's joins once lost the certificate key that way: join.yml imports both
# upload_certs.yml, which makes it, and init.yml, skipped there, which registers the same name).
from __future__ import annotations

import os

import pytest
import yaml

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLES_DIR = os.path.join(COLLECTION, "roles")
IMPORT_TASKS = {"import_tasks", "ansible.builtin.import_tasks"}
BLOCK_KEYS = ("block", "rescue", "always")


def task_files() -> list[str]:
    found = []
    for role in sorted(os.listdir(ROLES_DIR)):
        tasks = os.path.join(ROLES_DIR, role, "tasks")
        if os.path.isdir(tasks):
            for directory, _dirs, files in os.walk(tasks):
                found += [os.path.join(directory, name) for name in sorted(files) if name.endswith(".yml")]
    return found


def tasks_of(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or []


def walk(tasks: list[dict]):
    for task in tasks:
        yield task
        for key in BLOCK_KEYS:
            if isinstance(task.get(key), list):
                yield from walk(task[key])


def registers(path: str, seen: frozenset = frozenset()) -> dict[str, set[str]]:
    """{register name: the files under ``path``'s static imports that write it}."""
    found: dict[str, set[str]] = {}
    for task in walk(tasks_of(path)):
        if "register" in task:
            found.setdefault(task["register"], set()).add(os.path.relpath(path, COLLECTION))
        target = next((task[key] for key in IMPORT_TASKS if key in task), None)
        if isinstance(target, dict):
            target = target.get("file")
        if isinstance(target, str) and "{{" not in target:
            imported = os.path.normpath(os.path.join(os.path.dirname(path), target))
            if imported in seen or not os.path.exists(imported):
                continue
            for name, files in registers(imported, seen | {path}).items():
                found.setdefault(name, set()).update(files)
    return found


@pytest.mark.parametrize("path", task_files(), ids=lambda path: os.path.relpath(path, ROLES_DIR))
def test_one_writer_per_register_name_in_what_a_file_imports(path):
    shared = {name: sorted(files) for name, files in registers(path).items() if len(files) > 1}
    assert shared == {}, "register names written by more than one imported file: %s" % shared


def test_the_rule_finds_a_second_writer(tmp_path):
    (tmp_path / "a.yml").write_text("- name: a\n  ansible.builtin.command: a\n  register: x\n")
    (tmp_path / "b.yml").write_text("- name: b\n  block:\n    - name: b\n      ansible.builtin.command: b\n"
                                    "      register: x\n")
    (tmp_path / "main.yml").write_text("- name: A\n  ansible.builtin.import_tasks: a.yml\n"
                                       "- name: B\n  ansible.builtin.import_tasks:\n    file: b.yml\n")
    found = registers(str(tmp_path / "main.yml"))
    assert sorted(os.path.basename(name) for name in found["x"]) == ["a.yml", "b.yml"]
