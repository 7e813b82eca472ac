# How deep the dynamic includes (include_tasks, include_role) go from a playbook, through every static import and
# every role it runs: each level is a task result of its own and a file more to read to follow a run.
# playbooks/rotate_encryption_key.yml once went five deep (rotation -> step -> static pods -> images -> import).
from __future__ import annotations

import os

import pytest
import yaml

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLES_DIR = os.path.join(COLLECTION, "roles")
INCLUDES = {"ansible.builtin.include_tasks", "include_tasks", "ansible.builtin.import_tasks", "import_tasks"}
ROLES = {"ansible.builtin.include_role", "include_role", "ansible.builtin.import_role", "import_role"}
BLOCK_KEYS = ("block", "rescue", "always")


def load(path: str):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or []


def role_vars(role: str) -> dict:
    path = os.path.join(ROLES_DIR, role, "vars", "main.yml")
    return load(path) if os.path.exists(path) else {}


def targets(name: str, role: str | None) -> list[str]:
    """The files an include names: itself, or, for a template of a table in the role's vars ({{ _x[...] }}), each
    file of the table; none for another template (a file the role computes, which this does not follow)."""
    if "{{" not in name:
        return [name]
    variable = name.strip("{} ").split("[")[0].strip()
    values = role_vars(role).get(variable) if role else None
    return sorted(set(values.values())) if isinstance(values, dict) else []


def tasks_depth(tasks, directory: str, role: str | None, seen: tuple) -> int:
    deepest = 0
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        for key in BLOCK_KEYS:
            deepest = max(deepest, tasks_depth(task.get(key), directory, role, seen))
        for action in INCLUDES & set(task):
            argument = task[action]
            name = argument.get("file") if isinstance(argument, dict) else argument
            level = 0 if "import" in action else 1
            for target in targets(str(name), role):
                deepest = max(deepest, level + file_depth(os.path.join(directory, target), role, seen))
        for action in ROLES & set(task):
            argument = task[action]
            other = str(argument["name"]).rsplit(".", 1)[-1]
            entry = str(argument.get("tasks_from", "main"))
            if "{{" in other + entry:
                continue  # a role or entry point named at run time (the kubesphere components)
            path = os.path.join(ROLES_DIR, other, "tasks", os.path.splitext(entry)[0] + ".yml")
            level = 0 if "import" in action else 1
            deepest = max(deepest, level + file_depth(path, other, seen))
    return deepest


def file_depth(path: str, role: str | None, seen: tuple = ()) -> int:
    path = os.path.normpath(path)
    if path in seen:
        return 0
    return tasks_depth(load(path), os.path.dirname(path), role, seen + (path,))


def playbook_depth(name: str) -> int:
    deepest = 0
    for play in load(os.path.join(COLLECTION, "playbooks", name)):
        for section in ("pre_tasks", "tasks", "post_tasks", "handlers"):
            deepest = max(deepest, tasks_depth(play.get(section), os.path.join(COLLECTION, "playbooks"), None, ()))
        for role in play.get("roles") or []:
            other = str(role["role"] if isinstance(role, dict) else role).rsplit(".", 1)[-1]
            deepest = max(deepest, file_depth(os.path.join(ROLES_DIR, other, "tasks", "main.yml"), other))
    return deepest


PLAYBOOKS = sorted(name for name in os.listdir(os.path.join(COLLECTION, "playbooks")) if name.endswith(".yml"))


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_the_includes_of_a_playbook_are_at_most_three_deep(playbook):
    assert playbook_depth(playbook) <= 3


def test_the_key_rotation_is_followed_to_its_deepest_include():
    # rotation -> rewrite.yml -> rewrite_due.yml; static_pods (from the playbook) -> images -> images_import.yml
    assert playbook_depth("rotate_encryption_key.yml") == 3


def test_a_templated_include_is_followed_to_every_file_it_names():
    assert targets("{{ _encryption_rotation_steps[encryption_rotation_step] }}", "encryption") == [
        "rewrite.yml", "rotation_apply.yml", "rotation_finish.yml", "rotation_read.yml", "rotation_start.yml",
        "rotation_write.yml"]
