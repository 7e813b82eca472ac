"""The role variables a SlipwayCluster may set (operator/slipway_fleet/variables.py), checked against the roles:
every option of every argument spec classified once, and every variable the roles' YAML uses on the Job's side
(the Ansible controller) or sets for a step of their own refused, as read from the tasks themselves."""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import subprocess
import sys
from typing import Any, Iterator

import pytest
import yaml

from slipway_fleet import spec as fleet
from slipway_operator import collection
from slipway_fleet import variables

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ACCEPTED, REFUSED, SECRET, problems = variables.ACCEPTED, variables.REFUSED, variables.SECRET, variables.problems
# kubespray's names the model knows, from the collection as the fleet's image holds it (the checkout's link).
KUBESPRAY = collection.load(os.path.join(ROOT, ".cache", "collections"), "plugins.module_utils._kubespray").KUBESPRAY


@functools.lru_cache(maxsize=None)
def _load(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


# Every option of every entry point of every role: {name: [(role, entry point, spec)]}.
OPTIONS: dict[str, list[tuple[str, str, dict]]] = {}
for _path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
    for _entry, _body in _load(_path)["argument_specs"].items():
        for _name, _option in (_body.get("options") or {}).items():
            OPTIONS.setdefault(_name, []).append((_path.split(os.sep)[-3], _entry, _option))

TASK_FILES = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
                    + glob.glob(os.path.join(ROOT, "roles", "*", "handlers", "*.yml")))
PLAYBOOKS = sorted(glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))
# Every file Ansible evaluates expressions of on the controller: tasks, playbooks, role variables, templates.
EXPRESSION_FILES = (TASK_FILES + PLAYBOOKS + sorted(glob.glob(os.path.join(ROOT, "roles", "*", "vars", "*.yml")))
                    + sorted(glob.glob(os.path.join(ROOT, "roles", "*", "templates", "**", "*.j2"), recursive=True)))
IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
# Variables read with a default by a playbook or role that no argument spec declares (day-2 playbooks' own).
READ = re.compile(r"(?<![\w.'\"|] )(?<![\w.'\"|])([a-z][a-z0-9_]*)\s*(?:\|\s*default\(|is (?:not )?defined)")
LOCAL = ("localhost", "127.0.0.1")
# Arguments that name a file, a directory or a program where the task runs.
PATH_KEYS = {"src", "dest", "path", "paths", "kubeconfig", "file", "chdir", "creates", "removes", "argv", "cmd",
             "_raw_params", "executable"}
# Modules whose src (unless remote_src) or dest is a file of the controller wherever the task runs.
CONTROLLER_SRC = {"ansible.builtin.copy", "ansible.builtin.template", "ansible.builtin.unarchive",
                  "ansible.builtin.script", "ansible.builtin.include_vars"}
TASK_KEYWORDS = {"name", "when", "vars", "register", "loop", "loop_control", "tags", "delegate_to", "run_once",
                 "become", "no_log", "check_mode", "changed_when", "failed_when", "environment", "notify", "until",
                 "retries", "delay", "ignore_errors", "diff", "args", "block", "rescue", "always", "delegate_facts",
                 "listen", "throttle", "any_errors_fatal", "timeout", "become_user", "with_items"}


def names_in(value: Any, known: Any = None, expression: bool = False) -> set[str]:
    """The variable names a YAML value mentions (every string in it, in its Jinja parts; ``expression``: the whole
    text is one), string literals left out."""
    if isinstance(value, dict):
        return set().union(*(names_in(item, known, expression) for item in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(names_in(item, known, expression) for item in value)) if value else set()
    parts = [str(value)] if expression else JINJA.findall(str(value))
    found = set().union(*(IDENTIFIER.findall(QUOTED.sub("''", part)) for part in parts)) if parts else set()
    return found if known is None else found & set(known)


def words_in(path: str) -> set[str]:
    """Every identifier of a file, quoted or not."""
    return set(IDENTIFIER.findall(_text(path)))


def known_names() -> set[str]:
    return set(OPTIONS) | ACCEPTED | set(REFUSED) | set(SECRET)


def _calls(text: str, function: str) -> Iterator[str]:
    """The arguments of each call of ``function(`` in ``text``, up to the matching parenthesis."""
    for match in re.finditer(rf"(?<![\w.]){re.escape(function)}\(", text):
        depth, start = 1, match.end()
        for end in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                yield text[start:end]
                break


def _module(task: dict) -> tuple[str, Any]:
    for key, value in task.items():
        if key not in TASK_KEYWORDS and "." in key:
            return key, value
    return "", None


def _path_values(args: Any) -> list[Any]:
    """Every value of ``args`` (at any depth) under a key that names a file, directory or program."""
    if isinstance(args, dict):
        return [value for key, value in args.items() if key in PATH_KEYS] + [
            found for key, value in args.items() if key not in PATH_KEYS for found in _path_values(value)]
    if isinstance(args, list):
        return [found for value in args for found in _path_values(value)]
    return []


def _expand(names: set[str], definitions: dict[str, Any], depth: int = 4) -> set[str]:
    """``names`` with the names the internal variables among them (``_x``) are defined from, transitively."""
    result, todo = set(names), list(names)
    while todo and depth:
        depth -= 1
        todo = [name for var in todo if var.startswith("_") and var in definitions
                for name in names_in(definitions[var]) - result]
        result |= set(todo)
    return result


def role_of(path: str) -> str:
    parts = os.path.relpath(path, ROOT).split(os.sep)
    return parts[1] if parts[0] == "roles" else ""


def role_vars(role: str) -> dict[str, Any]:
    path = os.path.join(ROOT, "roles", role, "vars", "main.yml")
    return (_load(path) or {}) if role and os.path.isfile(path) else {}


def walk(items: Any, local: bool, scope: dict[str, Any]) -> Iterator[tuple[dict, bool, dict[str, Any]]]:
    """Each task of a task list with whether it runs on the controller and the variables of its blocks."""
    for task in items or []:
        if not isinstance(task, dict):
            continue
        here = local or str(task.get("delegate_to", "")) in LOCAL or task.get("connection") == "local"
        inner = {**scope, **(task.get("vars") or {})}
        if "block" in task:
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key), here, inner)
        else:
            yield task, here, inner


def _includes(task: dict, role: str) -> list[str]:
    """The task files a task includes or imports (a role's entry point, or a file of the same role)."""
    module, args = _module(task)
    if module in ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks"):
        name = args.get("file") if isinstance(args, dict) else args
        return [os.path.join(ROOT, "roles", role, "tasks", str(name))] if role and "{{" not in str(name) else []
    if module in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
        target = str(args["name"]).rsplit(".", maxsplit=1)[-1]
        return [os.path.join(ROOT, "roles", target, "tasks", f"{args.get('tasks_from', 'main')}.yml")]
    return []


def all_tasks() -> list[tuple[str, dict, bool, dict[str, Any]]]:
    """(file, task, on the controller, block variables) of every task of the playbooks and roles. A task file is on
    the controller when a play on localhost reaches it (through roles and includes)."""
    found: list[tuple[str, dict, bool, dict[str, Any]]] = []
    local_files: set[str] = set()
    queue: list[str] = []
    for path in PLAYBOOKS:
        for play in _load(path) or []:
            local = str(play.get("hosts", "")).strip() in LOCAL
            for key in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                for task, here, scope in walk(play.get(key), local, dict(play.get("vars") or {})):
                    found.append((path, task, here, scope))
                    if here:
                        queue.extend(_includes(task, ""))
            for role in play.get("roles") or []:
                if local:
                    queue.append(os.path.join(ROOT, "roles", str(role["role"]).rsplit(".", maxsplit=1)[-1], "tasks", "main.yml"))
    while queue:
        path = queue.pop()
        if path not in local_files and os.path.isfile(path):
            local_files.add(path)
            for task, _here, _scope in walk(_load(path), True, {}):
                queue.extend(_includes(task, role_of(path)))
    for path in TASK_FILES:
        found.extend((path, task, here, scope) for task, here, scope in walk(_load(path), path in local_files, {}))
    return found


TASKS = all_tasks()


def controller_side() -> dict[str, set[str]]:
    """Variables a task or an expression uses as a file, directory or program of the controller, by way of use."""
    known = known_names()
    ways: dict[str, set[str]] = {"lookup() or query() argument": set(), "controller_path filter or file test": set(),
                                 "path of a task on the controller": set(), "controller-side src or dest": set(),
                                 "which hosts a play runs on": set()}
    for path in EXPRESSION_FILES:
        text = _text(path)
        for function in ("lookup", "query", "q"):
            for args in _calls(text, function):
                ways["lookup() or query() argument"] |= names_in(args, known, expression=True)
        for match in re.finditer(r"([\w.]+(?:\s*\|\s*[\w.]+(?:\([^()]*\))?)*)\s*\|\s*slipway\.cluster\.controller_path"
                                 r"|([\w.]+)\s+is\s+(?:not\s+)?(?:file|exists|directory|link|abs)\b", text):
            ways["controller_path filter or file test"] |= names_in(match.group(1) or match.group(2), known, expression=True)
    for path, task, local, scope in TASKS:
        module, args = _module(task)
        # The task's and its blocks' own variables; those of the role's vars/main.yml only for a task on the controller
        # (a src's lookup() is judged by its own arguments above).
        definitions = {**scope, **(task.get("vars") or {})}
        if local:
            ways["path of a task on the controller"] |= _expand(
                names_in(_path_values(args)), {**role_vars(role_of(path)), **definitions}) & known
        if module in CONTROLLER_SRC and isinstance(args, dict) and not args.get("remote_src"):
            ways["controller-side src or dest"] |= _expand(names_in(args.get("src", "")), definitions) & known
        if module == "ansible.builtin.fetch" and isinstance(args, dict):
            ways["controller-side src or dest"] |= _expand(names_in(args.get("dest", "")), definitions) & known
    for path in PLAYBOOKS:
        for play in _load(path) or []:
            ways["which hosts a play runs on"] |= names_in(play.get("hosts", ""), known)
    return ways


CONTROLLER_SIDE = controller_side()


def step_inputs() -> set[str]:
    """Role options a playbook or task sets itself (vars of a role's entry point, a block, a task or a play): an extra
    variable would override them."""
    inputs: set[str] = set()
    for _path, task, _local, scope in TASKS:
        inputs |= (set(task.get("vars") or {}) | set(scope)) & set(OPTIONS)
    for path in PLAYBOOKS:
        for play in _load(path) or []:
            inputs |= set(play.get("vars") or {}) & set(OPTIONS)
    return inputs


def facts() -> set[str]:
    """The public names the roles and playbooks register or set as facts."""
    names: set[str] = set()
    for _path, task, _local, _scope in TASKS:
        module, args = _module(task)
        if isinstance(task.get("register"), str):
            names.add(task["register"])
        if module == "ansible.builtin.set_fact" and isinstance(args, dict):
            # A fact named by a variable ("{{ _preflight_model_variable }}": slipway_cluster) by that variable's value.
            definitions = role_vars(role_of(_path))
            names |= {str(definitions.get(key.strip("{} "), key)) for key in args if key != "cacheable"}
    return {name for name in names if not name.startswith("_")}


# --- every option classified ---------------------------------------------------------------------------------

def test_every_option_of_every_argument_spec_is_in_exactly_one_table():
    assert len(OPTIONS) > 200, "the argument specs were not found"
    unclassified = sorted(name for name in OPTIONS if name not in ACCEPTED | set(REFUSED) | set(SECRET))
    assert not unclassified, f"classify these role variables in operator/slipway_fleet/variables.py: {unclassified}"
    twice = sorted(name for name in known_names()
                   if (name in ACCEPTED) + (name in REFUSED) + (name in SECRET) != 1)
    assert not twice, f"in more than one table: {twice}"


def test_the_tables_hold_only_names_the_collection_reads():
    """No stale entry: every name is an option, a variable some playbook or role reads, a fact, or kubespray's."""
    used = set(OPTIONS) | set(KUBESPRAY) | facts()
    for path in EXPRESSION_FILES:
        used |= words_in(path)
    stale = sorted(name for name in known_names() if name not in used)
    assert not stale, f"no role, playbook or kubespray row reads these: {stale}"


def test_every_variable_a_playbook_reads_with_a_default_is_classified():
    read: set[str] = set()
    for path in EXPRESSION_FILES:
        for line in _text(path).splitlines():
            if not line.strip().startswith("#"):
                read |= {name for name in READ.findall(line) if not name.startswith("ansible_")}
    magic = {"inventory_dir", "playbook_dir", "role_path", "omit", "item", "hostvars", "groups"}
    unclassified = sorted(read - magic - known_names())
    assert not unclassified, f"variables the playbooks read that variables.py does not classify: {unclassified}"


def test_every_option_with_no_log_is_a_secret():
    logged = sorted(name for name, specs in OPTIONS.items() if any(spec.get("no_log") for _r, _e, spec in specs))
    assert logged, "no option has no_log: the argument specs changed"
    assert [name for name in logged if name not in SECRET] == []


def test_each_secret_is_read_as_its_type_says():
    for name, kind in SECRET.items():
        types = {spec.get("type") for _r, _e, spec in OPTIONS[name]}
        assert kind == ("yaml" if types & {"dict", "list"} else "text"), (name, types, kind)


def test_no_secret_value_is_a_default_anyone_reads():
    """The secrets' defaults are empty: a cluster without the Secret gets no shared password."""
    for name in SECRET:
        assert all(not spec.get("default") for _r, _e, spec in OPTIONS[name]), name


# --- nothing on the Job's side -------------------------------------------------------------------------------

@pytest.mark.parametrize("way", sorted(CONTROLLER_SIDE))
def test_no_variable_the_controller_side_uses_is_accepted(way):
    used = CONTROLLER_SIDE[way]
    assert used or way == "controller-side src or dest", f"found nothing as {way}: the walk over the roles broke"
    assert sorted(used & ACCEPTED) == [], f"accepted, but the roles use them as {way}"


def test_the_walk_finds_the_known_controller_side_uses():
    """The derivation itself: uses read by hand from the roles (a lookup, a delegated write, a copy's src, a play's
    hosts) are found, so an empty result above is not a walk that saw nothing."""
    ways = CONTROLLER_SIDE
    assert {"cni_manifest_src", "control_plane_audit_policy_src", "kubesphere_cluster_configuration"} <= \
        ways["lookup() or query() argument"]
    assert {"kubesphere_kubeconfig", "etcd_snapshot", "node_kubeconfig"} <= ways["controller_path filter or file test"]
    assert {"control_plane_kubeconfig_dest", "etcd_backup_dir", "reset_controller_kubeconfig",
            "preflight_kubeconfig"} <= ways["path of a task on the controller"]
    assert "etcd_restore_snapshot" in ways["controller-side src or dest"]
    assert {"fleet_kubeconfig", "kubesphere_kubeconfig", "operator_kubeconfig"} <= ways["which hosts a play runs on"]


def test_no_option_documented_on_the_controller_is_accepted():
    said = re.compile(r"\b(on|to) the controller\b|\bthe controller's\b", re.I)
    documented = set()
    for name, specs in OPTIONS.items():
        for _role, _entry, spec in specs:
            if spec.get("type") in ("bool", "int", "dict") or (spec.get("type") == "list" and spec.get("elements") != "path"):
                continue  # a toggle or a number: what its description says of the controller is not where it points
            text = spec.get("description")
            if said.search(" ".join(text) if isinstance(text, list) else str(text)):
                documented.add(name)
    assert "cni_manifest_src" in documented
    assert sorted(documented & ACCEPTED) == []


def test_every_accepted_path_is_a_path_of_the_nodes():
    """An accepted option of type path names a file, directory or program of the hosts: some task uses it, and no
    use of it is on the controller."""
    paths = {name for name, specs in OPTIONS.items() if name in ACCEPTED
             and any("path" in (spec.get("type"), spec.get("elements")) for _r, _e, spec in specs)}
    assert {"containerd_root_dir", "reset_extra_paths"} <= paths
    on_controller = set().union(*CONTROLLER_SIDE.values())
    used = set().union(*(words_in(path) for path in EXPRESSION_FILES))
    assert sorted(paths - used) == [], "accepted paths that no task or template uses"
    assert sorted(paths & on_controller) == []


def test_what_a_playbook_sets_for_a_step_of_its_own_is_refused():
    inputs = step_inputs()
    assert {"artifacts_only", "control_plane_static_pods", "etcd_restore_snapshot", "preflight_read_etcd"} <= inputs
    assert sorted(inputs & ACCEPTED) == [], "an extra variable would override what the playbooks set"


def test_what_the_fleet_sets_for_an_operation_is_refused():
    """operation_vars (spec.py) and the etcd-backup operation's etcd_backup_dir (controller.py)."""
    spec = {"kubernetesVersion": "1.37.1", "hosts": [{"name": "cp1", "address": "10.0.0.1", "roles": ["control_plane"]}]}
    base = set(fleet.operation_vars("converge", [], spec, "c"))
    for op_type in ("remove-node", "reset", "renew-certs"):
        added = set(fleet.operation_vars(op_type, ["cp1"], spec, "c")) - base
        assert added and all(name in REFUSED for name in added), (op_type, added)
    controller = _text(os.path.join(ROOT, "operator", "slipway_fleet", "controller.py"))
    assert set(re.findall(r'variables\["(\w+)"\] =', controller)) <= set(REFUSED)


def test_every_fact_the_roles_set_is_refused():
    found = facts()
    assert {"artifacts_images", "preflight_node_facts", "etcd_snapshot_taken"} <= found
    assert sorted(found - set(REFUSED)) == [], "a fact given as an extra variable would take the fact's place"


def test_the_spec_fields_are_named_for_the_slipway_settings():
    slipway = {name for name in OPTIONS if name.startswith("slipway_")}
    assert slipway <= set(REFUSED)
    for name, field in fleet.SETTING_FIELDS.items():
        if name.startswith("slipway_"):
            assert field in REFUSED[name], (name, REFUSED[name])
    for name in slipway - set(fleet.SETTING_FIELDS):
        assert "has no field in the spec" in REFUSED[name], name


def test_every_kubespray_name_is_refused_with_what_to_set():
    for name, row in KUBESPRAY.items():
        reason = REFUSED[name]
        assert reason.startswith("is kubespray's"), name
        if row.ours in fleet.SETTING_FIELDS:
            field = fleet.SETTING_FIELDS[row.ours]
            assert field in reason or field.rsplit(".", 1)[0] in reason, (name, reason)
        elif row.ours and not row.ours.startswith("slipway_"):
            assert row.ours in reason and row.ours in ACCEPTED | set(SECRET), (name, reason)
        else:
            assert "leave it out" in reason, (name, reason)


def test_the_crd_refuses_the_prefixes_problems_refuses_too():
    crd = _text(os.path.join(ROOT, "operator", "crds", "fleet.slipway.io.yml"))
    assert "!k.startsWith('slipway_') && !k.startsWith('ansible_')" in crd
    assert not [name for name in ACCEPTED | set(SECRET) if name.startswith(("slipway_", "ansible_"))]


def test_the_module_imports_no_ansible():
    code = ("import sys; import slipway_fleet.variables; "
            "print(sorted(name for name in sys.modules if name.split('.')[0] in ('ansible', 'ansible_collections')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# --- the messages --------------------------------------------------------------------------------------------

def test_accepted_variables_have_no_problem():
    assert problems({name: "x" for name in ACCEPTED}) == []
    assert problems({}, list(SECRET)) == []


def test_a_refused_variable_is_named_with_its_reason():
    assert problems({"cni_manifest_src": "/etc/shadow"}) == [f"spec.variables.cni_manifest_src: {REFUSED['cni_manifest_src']}"]
    [message] = problems({"control_plane_audit_policy_src": "/var/run/secrets/kubernetes.io/serviceaccount/token"})
    assert message.startswith("spec.variables.control_plane_audit_policy_src: is a file the Job")
    assert "/var/run/secrets" not in message


def test_the_release_file_settings_are_refused_from_a_slipwaycluster():
    """The pins a tenant would give and a plain-HTTP mirror have no field in the spec: a SlipwayCluster installs a
    release the collection pins, or from the bundle, and its mirror is https://."""
    assert problems({"slipway_artifacts_release_checksums": {"kubeadm": {}},
                     "slipway_artifacts_mirror_insecure_http": True}) == [
        "spec.variables.slipway_artifacts_mirror_insecure_http: has no field in the spec: a SlipwayCluster's "
        "spec.artifacts.mirrorURL is an https:// server",
        "spec.variables.slipway_artifacts_release_checksums: has no field in the spec: a SlipwayCluster installs a "
        "release whose sums the collection pins, or from spec.artifacts.source bundle"]


def test_a_secret_in_spec_variables_says_where_it_goes():
    assert problems({"loadbalancer_keepalived_auth_pass": "s3cret"}) == [
        "spec.variables.loadbalancer_keepalived_auth_pass: is a secret: give it in spec.secretVariablesFrom from a Secret"]
    assert all("s3cret" not in message for message in problems({"containerd_registry_auths": "s3cret"}))


def test_an_unknown_name_gets_the_nearest_accepted_one():
    assert problems({"control_plane_coredns_upstream": "[]"}) == [
        "spec.variables.control_plane_coredns_upstream: is not a role variable of slipway.cluster; did you mean "
        "control_plane_coredns_upstreams?"]
    [message] = problems({"loadbalancer_keepalived_authpass": "x"})
    assert message.endswith("did you mean loadbalancer_keepalived_auth_pass (a secret: give it in spec.secretVariablesFrom)?")
    [message] = problems({"zzz": "1"})
    assert message == ("spec.variables.zzz: is not a role variable of slipway.cluster; the variables a SlipwayCluster "
                       "takes are listed in docs/fleet.md, and each role's in ansible-doc -t role slipway.cluster.ROLE")


def test_the_prefixes_say_what_to_use():
    assert problems({"ansible_ssh_common_args": "-o ProxyCommand=x"}) == [
        "spec.variables.ansible_ssh_common_args: is an Ansible connection variable: spec.hosts gives the address, user "
        "and port"]
    [message] = problems({"slipway_lab_thing": "1"})
    assert "the spec's fields give the slipway_* settings" in message
    [message] = problems({"_control_plane_first": "x"})
    assert message.endswith("is internal to a role")


def test_a_long_name_is_cut_in_the_message():
    [message] = problems({"x" * 5000: "1"})
    assert len(message) < 400


def test_every_problem_at_once_in_order():
    found = problems({"reset_paths": "[]", "zz_unknown": "1", "cni_manifest_src": "x", "containerd_registry_auths": "{}",
                      "kube_version": "1.37.1", "remove_node_names": "[cp1]"},
                     ["containerd_registry_auths", "reset_paths", "loadbalancer_keepalived_auth_pas",
                      "containerd_registry_auths", "etcd_backup_dir"])
    assert [message.split(":")[0] for message in found] == [
        "spec.variables.cni_manifest_src", "spec.variables.containerd_registry_auths", "spec.variables.kube_version",
        "spec.variables.remove_node_names", "spec.variables.zz_unknown", "spec.secretVariablesFrom[1].variable",
        "spec.secretVariablesFrom[2].variable", "spec.secretVariablesFrom[3].variable",
        "spec.secretVariablesFrom[4].variable"]
    assert found[2] == "spec.variables.kube_version: is kubespray's name; a SlipwayCluster sets spec.kubernetesVersion instead"
    assert found[3].endswith("take the hosts out of spec.hosts to remove them")
    assert found[5] == "spec.secretVariablesFrom[1].variable: reset_paths is no secret: write it in spec.variables"
    assert found[6] == ("spec.secretVariablesFrom[2].variable: loadbalancer_keepalived_auth_pas is not a secret variable of "
                        "slipway.cluster; did you mean loadbalancer_keepalived_auth_pass?")
    assert found[7] == ("spec.secretVariablesFrom[3].variable: containerd_registry_auths is given already by "
                        "spec.secretVariablesFrom[0]; give each once")
    assert found[8] == f"spec.secretVariablesFrom[4].variable: etcd_backup_dir {REFUSED['etcd_backup_dir']}"


def test_every_reason_is_a_sentence_after_the_name():
    for name, reason in REFUSED.items():
        assert reason[:1].islower() and not reason.endswith("."), (name, reason)
        assert len(reason) <= 200, (name, len(reason))


# --- what the fleet's own pages and tests set ------------------------------------------------------------------

def _doc_variables() -> dict[str, set[str]]:
    """Every spec.variables name of the SlipwayClusters that docs/fleet.md, the fleet scenario and the lab show."""
    found: dict[str, set[str]] = {}
    page = _text(os.path.join(ROOT, "docs", "fleet.md"))
    for block in re.findall(r"```yaml\n(.*?)```", page, re.S):
        for doc in yaml.safe_load_all(block):
            if isinstance(doc, dict) and doc.get("kind") == "SlipwayCluster":
                found.setdefault("docs/fleet.md", set()).update((doc.get("spec") or {}).get("variables") or {})
    scenario = _load(os.path.join(ROOT, "molecule", "fleet", "vars", "fleet.yml"))
    found["molecule/fleet"] = set(scenario["lab_spec"]["variables"])
    code = ("import json, sys; import lab_fleet; "
            "doc = lab_fleet.example(open(sys.argv[1]).read()); "
            "print(json.dumps(sorted(lab_fleet.lab_cluster(doc, '10.0.0.1', '1.37.1', {'evictionHard': {}})['spec']['variables'])))")
    result = subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "docs", "fleet.md")],
                            capture_output=True, text=True, check=True)
    found["lab/lab_fleet.py"] = set(json.loads(result.stdout))
    return found


def test_the_variables_the_fleets_pages_and_lab_show_stay_accepted():
    found = _doc_variables()
    assert {"control_plane_coredns_upstreams", "reset_containerd_images"} <= found["docs/fleet.md"]
    assert "control_plane_kubelet_configuration" in found["molecule/fleet"] & found["lab/lab_fleet.py"]
    for where, names in found.items():
        assert problems(dict.fromkeys(names, "x")) == [], where
