# Unit tests of the kubesphere role's component table (_kubesphere_components in vars/main.yml), which says how
# a component is installed: its entries are components of the plan's catalogue, the one home of what a component
# is (status key, parent, install order), and repeat none of it; it names only files, images and readiness checks
# that exist, and the role walks it with includes at most two deep from tasks/main.yml. Every other list of the
# components (the role's argument specs, docs/kubesphere.md, the operator role's namespaces) agrees with those two,
# and no file outside them and the lists checked here names the components again.
from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration as cc

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE = os.path.join(COLLECTION, "roles", "kubesphere")
REQUIRED = {"namespaces", "templates", "images", "ready"}
OPTIONAL = {"crds", "objects_from", "refuse", "prepare", "check", "webhook"}
READY_KEYS = {"api_version", "kind", "namespace", "name", "label_selectors", "condition"}
IMAGE_REFERENCE = re.compile(r"_kubesphere_(?:core_)?image\.(\w+)")
INCLUDES = ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks", "ansible.builtin.include_role",
            "ansible.builtin.import_role")
MAX_INCLUDE_DEPTH = 2


def load(*path):
    with open(os.path.join(*path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


VARS = load(ROLE, "vars", "main.yml")
TABLE = VARS["_kubesphere_components"]
IMAGES = load(ROLE, "defaults", "main.yml")["kubesphere_images"]
NAMES = sorted(TABLE)


def test_every_entry_is_a_component_of_the_plan():
    assert set(TABLE) <= set(cc.COMPONENT_NAMES), set(TABLE) - set(cc.COMPONENT_NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_what_a_component_is_has_one_home_the_plans_catalogue(name):
    """Status key, parent and install order are the catalogue's (_cluster_configuration.py): the table has none."""
    assert not set(TABLE[name]) & {"status_key", "status", "requires", "parent", "order"}


@pytest.mark.parametrize("name", NAMES)
def test_an_entry_has_the_documented_keys_only(name):
    entry = TABLE[name]
    assert REQUIRED <= set(entry), REQUIRED - set(entry)
    assert set(entry) <= REQUIRED | OPTIONAL, set(entry) - REQUIRED - OPTIONAL
    for key in ("namespaces", "templates", "images", "ready", "crds", "prepare", "check", "refuse"):
        assert isinstance(entry.get(key, []), list), key


@pytest.mark.parametrize("name", NAMES)
def test_a_child_is_installed_only_with_its_parent(name):
    parent = cc.COMPONENTS[name].parent
    assert parent is None or parent in TABLE, f"{name} is installed, its parent {parent} is not"


@pytest.mark.parametrize("name", NAMES)
def test_files_named_by_an_entry_exist(name):
    entry = TABLE[name]
    assert entry["templates"], "every component names its objects (to apply or to delete)"
    for template in entry["templates"]:
        assert os.path.isfile(os.path.join(ROLE, "templates", template)), template
    for crd in entry.get("crds", []):
        assert os.path.isfile(os.path.join(ROLE, "files", crd)), crd
    for task_file in entry.get("prepare", []) + entry.get("check", []):
        assert os.path.isfile(os.path.join(ROLE, "tasks", task_file)), task_file
    if "objects_from" in entry:
        source = entry["objects_from"]
        assert set(source) == {"role", "tasks_from", "var"}
        namespace, collection, role = source["role"].split(".")
        assert (namespace, collection) == ("slipway", "cluster")
        assert os.path.isfile(os.path.join(COLLECTION, "roles", role, "tasks", source["tasks_from"] + ".yml"))
    if "webhook" in entry:
        assert set(entry["webhook"]) == {"secret", "namespace", "service"}
        assert entry["webhook"]["namespace"] in entry["namespaces"]


@pytest.mark.parametrize("name", NAMES)
def test_images_are_the_ones_its_templates_run(name):
    entry = TABLE[name]
    referenced = set()
    for template in entry["templates"]:
        with open(os.path.join(ROLE, "templates", template), encoding="utf-8") as handle:
            referenced |= set(IMAGE_REFERENCE.findall(handle.read()))
    assert set(entry["images"]) == referenced, f"table {sorted(entry['images'])}, templates {sorted(referenced)}"
    assert set(entry["images"]) <= set(IMAGES), set(entry["images"]) - set(IMAGES)


@pytest.mark.parametrize("name", NAMES)
def test_readiness_is_said_for_every_component(name):
    ready = TABLE[name]["ready"]
    assert ready, "say how readiness is checked"
    for check in ready:
        if isinstance(check, str):
            assert check == "applied"
            continue
        assert set(check) <= READY_KEYS, set(check) - READY_KEYS
        assert "kind" in check and ("name" in check or "label_selectors" in check), check
        if "condition" in check:
            assert set(check["condition"]) <= {"type", "status", "reason"} and "type" in check["condition"]


@pytest.mark.parametrize("name", NAMES)
def test_refused_settings_are_off_by_default(name):
    for rule in TABLE[name].get("refuse", []):
        assert set(rule) == {"setting", "what"}
        value = VARS["_kubesphere_spec_defaults"]
        for key in rule["setting"]:
            value = value[key]
        assert value is False, rule


def test_every_implemented_component_is_an_entry():
    assert VARS["_kubesphere_implemented"] == "{{ _kubesphere_components.keys() | list }}"


def tasks_of(data):
    """Every task in a task list, blocks and their rescue and always sections included."""
    for task in data or []:
        yield task
        for section in ("block", "rescue", "always"):
            yield from tasks_of(task.get(section))


def included_files(path):
    """(role tasks directory, file) pairs a task file includes or imports, templated names resolved from the table."""
    tasks_dir = os.path.dirname(path)
    found = []
    for task in tasks_of(load(path)):
        for action in INCLUDES:
            if action not in task:
                continue
            target = task[action]
            if action.endswith("_role"):
                if "{{" in target["name"]:
                    for entry in TABLE.values():
                        if "objects_from" in entry:
                            role = entry["objects_from"]["role"].split(".")[-1]
                            found.append(os.path.join(COLLECTION, "roles", role, "tasks",
                                                      entry["objects_from"]["tasks_from"] + ".yml"))
                else:
                    role = target["name"].split(".")[-1]
                    found.append(os.path.join(COLLECTION, "roles", role, "tasks",
                                              target.get("tasks_from", "main").replace(".yml", "") + ".yml"))
            elif "{{" in target:
                key = {"{{ _kubesphere_prepare }}": "prepare", "{{ _kubesphere_check }}": "check"}.get(target)
                assert key, target
                found += [os.path.join(tasks_dir, name) for entry in TABLE.values() for name in entry.get(key, [])]
            else:
                found.append(os.path.join(tasks_dir, target))
    return found


def include_depth(path, seen=()):
    assert path not in seen, f"{path} includes itself"
    children = included_files(path)
    return max((1 + include_depth(child, seen + (path,)) for child in children), default=0)


def test_includes_go_at_most_two_deep_from_main():
    assert include_depth(os.path.join(ROLE, "tasks", "main.yml")) == MAX_INCLUDE_DEPTH


def test_no_task_file_per_component():
    assert not os.path.exists(os.path.join(ROLE, "tasks", "components"))


# --- the other lists of components agree with the catalogue and the table ----------------------------------------

SPECS = load(ROLE, "meta", "argument_specs.yml")["argument_specs"]["main"]
DOCS = os.path.join(COLLECTION, "docs", "kubesphere.md")
NAMED = re.compile(r"[VC`]\(?([a-z_]+(?:\.[a-z_]+)?)\)?`?")


def doc_text():
    with open(DOCS, encoding="utf-8") as handle:
        return handle.read()


def names_in(text):
    return [name for name in NAMED.findall(text) if name in cc.COMPONENTS]


def test_the_argument_specs_name_the_implemented_components():
    listing = next(item for item in SPECS["description"] if item.startswith("Implemented are"))
    assert sorted(set(names_in(listing.split("Any other")[0]))) == NAMES


def test_the_argument_specs_defaults_are_the_defaults_key_for_key():
    """kubesphere_images among them: its default is documented in the specs and set in defaults/main.yml."""
    defaults = load(ROLE, "defaults", "main.yml")
    assert set(SPECS["options"]) >= set(defaults), set(defaults) - set(SPECS["options"])
    for name, value in defaults.items():
        assert SPECS["options"][name].get("default") == value, name


def test_the_docs_list_the_components_in_install_order_and_what_is_implemented():
    text = doc_text()
    order = text.split("then installs and reapplies in install order:", 1)[1].split("A rerun", 1)[0]
    assert names_in(order) == list(cc.COMPONENT_NAMES)
    implemented = text.split("## What is implemented", 1)[1].split("Not supported yet, recorded as `failed`", 1)
    rows = re.findall(r"^\| `([a-z_.]+)` \|", implemented[0], flags=re.MULTILINE)
    assert sorted(rows) == NAMES
    unsupported = implemented[1].split("Settings `monitoring`", 1)[0]
    assert names_in(unsupported) == [name for name in cc.COMPONENT_NAMES if name not in TABLE]


def test_the_operator_role_makes_the_namespaces_of_the_components():
    """roles/operator creates the components' namespaces (its Roles live there) and may touch those only."""
    wanted = sorted({cc.DEFAULT_NAMESPACE} | {namespace for entry in TABLE.values() for namespace in entry["namespaces"]})
    tasks = load(COLLECTION, "roles", "operator", "tasks", "main.yml")
    created = next(task for block in tasks for task in block.get("block", [])
                   if task.get("name") == "Create the namespaces of the operator and of the components")
    assert sorted(created["loop"]) == wanted
    with open(os.path.join(COLLECTION, "roles", "operator", "templates", "operator.yml.j2"), encoding="utf-8") as handle:
        template = handle.read()
    allowed = re.search(r"resources: \[namespaces\]\n\s+verbs: \[get, create, patch, update\]\n\s+resourceNames: \[([^]]+)\]",
                        template)
    assert allowed and sorted(name.strip() for name in allowed.group(1).split(",")) == wanted
    granted = set(re.findall(r"^  '([a-z-]+)': \{$", template, flags=re.MULTILINE))
    assert granted - {"kube-system"} <= set(wanted), granted - set(wanted)


# Names of components that no other word shares: a file naming several of them is a list of the components.
DISTINCT = tuple(name for name in cc.COMPONENT_NAMES if "." in name or "_" in name)
# The homes (the catalogue, the role's table) and the lists these tests and the modules' tests keep equal to them.
LISTS = {"plugins/module_utils/_cluster_configuration.py", "roles/kubesphere/vars/main.yml",
         "plugins/modules/component_status.py", "plugins/modules/cluster_configuration_info.py",
         "roles/kubesphere/meta/argument_specs.yml", "docs/kubesphere.md"}
# Tests name components as expectations; changelog fragments and measurements are records of their time.
NOT_LISTS = ("tests/", "changelogs/", "docs/measurements/")


def tracked_files():
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=COLLECTION, check=True,
                                capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        listed = [os.path.relpath(os.path.join(top, name), COLLECTION) for top, _dirs, names in os.walk(COLLECTION)
                  for name in names]
    return sorted(path for path in listed if path.endswith((".py", ".yml", ".yaml", ".j2", ".md", ".json"))
                  and not path.startswith(NOT_LISTS))


def test_no_other_file_lists_the_components():
    found = {}
    for path in tracked_files():
        try:
            with open(os.path.join(COLLECTION, path), encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            continue
        named = [name for name in DISTINCT if re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", text)]
        if len(named) >= 4 and path not in LISTS:
            found[path] = named
    assert found == {}, ("a list of KubeSphere components outside the catalogue (plugins/module_utils/"
                         "_cluster_configuration.py) and the role's table: derive it from them", found)
