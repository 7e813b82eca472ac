# The roles' boundaries, read from the YAML: every task file another role or a playbook runs (tasks_from) is an
# entry point declared in that role's meta/argument_specs.yml, and no file outside a role reads or sets one of
# the role's private variables (_ROLE_x or __ROLE_x, named in the role's own files): inputs go in by vars: under
# declared options, results come out under public names.
from __future__ import annotations

import os
import re

import pytest
import yaml

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLES_DIR = os.path.join(COLLECTION, "roles")
ROLE_ACTIONS = {"import_role", "include_role", "ansible.builtin.import_role", "ansible.builtin.include_role"}
# Where roles are called from: the playbooks, the roles themselves and the Molecule scenarios.
CALLERS = ("playbooks", "roles", "molecule")


def roles() -> list[str]:
    return sorted(name for name in os.listdir(ROLES_DIR) if os.path.isdir(os.path.join(ROLES_DIR, name)))


def yaml_files(*tops: str) -> list[str]:
    found = [os.path.join(COLLECTION, "site.yml")]
    for top in tops:
        for directory, _dirs, files in os.walk(os.path.join(COLLECTION, top)):
            found += [os.path.join(directory, name) for name in files if name.endswith((".yml", ".yaml"))]
    return sorted(found)


def load_all(path: str) -> list:
    with open(path, encoding="utf-8") as handle:
        try:
            return [document for document in yaml.safe_load_all(handle) if document is not None]
        except yaml.YAMLError:  # Jinja templates with a .yml name (never task files)
            return []


def walk(node):
    """Every mapping in a YAML tree (plays, tasks, blocks, nested ones)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def role_calls(path: str) -> list[tuple[str, str]]:
    """(role, tasks_from) of every import_role/include_role with tasks_from in a file."""
    calls = []
    for document in load_all(path):
        for mapping in walk(document):
            for action in ROLE_ACTIONS & set(mapping):
                arguments = mapping[action]
                if isinstance(arguments, dict) and "tasks_from" in arguments:
                    calls.append((str(arguments["name"]), str(arguments["tasks_from"])))
    return calls


def owner(path: str) -> str | None:
    relative = os.path.relpath(path, COLLECTION).split(os.sep)
    return relative[1] if relative[0] == "roles" else None


def entry_points(role: str) -> set[str]:
    with open(os.path.join(ROLES_DIR, role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        return set(yaml.safe_load(handle)["argument_specs"])


def outside_calls() -> list[tuple[str, str, str]]:
    calls = []
    for path in yaml_files(*CALLERS):
        for name, tasks_from in role_calls(path):
            role = name.rsplit(".", 1)[-1]
            if "{{" in tasks_from or "{{" in name or role == owner(path):
                continue  # a template names its target at run time; a role's own files are not entry points
            calls.append((os.path.relpath(path, COLLECTION), role, os.path.splitext(tasks_from)[0]))
    return calls


def test_the_roles_are_called_from_outside():
    # The check below has something to check: the playbooks run role entry points.
    assert len({(role, target) for _path, role, target in outside_calls()}) >= 20


def test_every_task_file_run_from_outside_its_role_is_a_declared_entry_point():
    undeclared = sorted({f"{path}: {role} tasks_from {target}" for path, role, target in outside_calls()
                         if target not in entry_points(role)})
    assert not undeclared, "declare these in the role's meta/argument_specs.yml:\n" + "\n".join(undeclared)


def test_every_declared_entry_point_has_its_task_file():
    missing = [f"{role}: {entry}" for role in roles() for entry in entry_points(role)
               if not os.path.isfile(os.path.join(ROLES_DIR, role, "tasks", entry + ".yml"))]
    assert not missing


def private_names(role: str) -> set[str]:
    """The private variables a role names in its own files: _ROLE_x and __ROLE_x."""
    pattern = re.compile(r"\b_{1,2}%s_\w+" % re.escape(role))
    names: set[str] = set()
    for path in yaml_files(os.path.join("roles", role)):
        if owner(path) == role:
            with open(path, encoding="utf-8") as handle:
                names.update(pattern.findall(handle.read()))
    return names


def private_reads() -> list[str]:
    found = []
    privates = {role: private_names(role) for role in roles()}
    for path in yaml_files(*CALLERS):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for role, names in privates.items():
            if role == owner(path):
                continue
            for name in sorted(names):
                if re.search(r"\b%s\b" % re.escape(name), text):
                    found.append(f"{os.path.relpath(path, COLLECTION)}: {name} (private to the {role} role)")
    return found


def test_the_roles_have_private_names():
    assert all(private_names(role) for role in ("control_plane", "encryption", "etcd", "node", "loadbalancer", "certs",
                                                "remove_node", "etcd_restore", "recover"))


def test_no_file_outside_a_role_names_its_private_variables():
    found = private_reads()
    assert not found, "pass inputs by vars: under a declared option, read results by a public name:\n" + "\n".join(found)


# The playbooks that are plays of entry points: their state lives in roles, where the checks above see it.
ROLE_PLAYBOOKS = ("upgrade.yml", "certs.yml",
                  "remove_node.yml", "etcd_restore.yml", "recover_control_plane.yml")
PLAYBOOK_ACTIONS = ROLE_ACTIONS | {"import_playbook", "ansible.builtin.import_playbook"}


def own_tasks(path: str) -> list[str]:
    """The tasks of a playbook that run no role (blocks looked into), by name."""
    found = []

    def visit(tasks):
        for task in tasks or []:
            if "block" in task:
                visit(task["block"])
                visit(task.get("rescue"))
                visit(task.get("always"))
            elif not PLAYBOOK_ACTIONS & set(task):
                found.append(str(task.get("name")))

    for play in load_all(path)[0]:
        if not PLAYBOOK_ACTIONS & set(play):
            for section in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                visit(play.get(section))
    return found


@pytest.mark.parametrize("playbook", ROLE_PLAYBOOKS)
def test_the_playbooks_of_entry_points_run_no_task_of_their_own(playbook):
    found = own_tasks(os.path.join(COLLECTION, "playbooks", playbook))
    assert not found, f"playbooks/{playbook}: move these tasks into a role's entry point:\n" + "\n".join(found)


def test_a_task_of_its_own_is_found(tmp_path):
    path = tmp_path / "play.yml"
    path.write_text("- hosts: all\n  tasks:\n    - block:\n        - name: Own\n          ansible.builtin.debug: {}\n"
                    "        - ansible.builtin.include_role: {name: x}\n", encoding="utf-8")
    assert own_tasks(str(path)) == ["Own"]


@pytest.mark.parametrize("text, expected", [
    ("- ansible.builtin.import_role:\n    name: slipway.cluster.etcd\n    tasks_from: snapshot\n",
     [("slipway.cluster.etcd", "snapshot")]),
    ("- block:\n    - include_role: {name: node, tasks_from: kubelet.yml}\n", [("node", "kubelet.yml")]),
    ("- ansible.builtin.import_role:\n    name: slipway.cluster.node\n", []),
])
def test_role_calls_are_found_in_blocks_and_short_forms(tmp_path, text, expected):
    path = tmp_path / "play.yml"
    path.write_text(text, encoding="utf-8")
    assert role_calls(str(path)) == expected
