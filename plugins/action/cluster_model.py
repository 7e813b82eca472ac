# Copyright: slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Build the validated cluster model on the controller, before any host is contacted."""

from __future__ import annotations

import glob
import inspect
import os
import subprocess
from typing import Any

import yaml

from ansible.errors import AnsibleError
from ansible.utils.vars import load_extra_vars
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url
from ansible.plugins.action import ActionBase
from ansible.vars.hostvars import HostVarsVars

from ansible_collections.slipway.cluster.plugins.module_utils._day2 import (
    PLAYBOOK_SETTINGS,
    PLAYBOOKS,
    PREFIXES,
    Run,
    check_playbook,
    check_snapshot_file,
)
from ansible_collections.slipway.cluster.plugins.module_utils._file_checksums import ChecksumCache, default_cache_path
from ansible_collections.slipway.cluster.plugins.module_utils._kubespray import KUBESPRAY
from ansible_collections.slipway.cluster.plugins.module_utils._model import build_model, check_settings
from ansible_collections.slipway.cluster.plugins.module_utils._problems import Collector, ModelError, Problem, format_problems
from ansible_collections.slipway.cluster.plugins.module_utils._settings import (
    OWN_PREFIXES,
    OWN_VARIABLES,
    ROLE_VARIABLE_NAMES,
    ROLES_DIR,
    role_defaults_of,
)
from ansible_collections.slipway.cluster.plugins.module_utils._paths import controller_path

ARGUMENT_SPEC = {
    "settings": {"type": "dict", "default": {}},
    "exclude": {"type": "list", "elements": "str", "default": []},
    "as_fact": {"type": "bool", "default": True},
    "scope": {"type": "str", "default": "cluster", "choices": ["cluster", "settings"]},
    "playbook": {"type": "str", "default": "site", "choices": list(PLAYBOOKS)},
}


# ansible-core 2.19 templates a host's variables under that host's context and takes its name; 2.16 to 2.18 take the
# variables and the loader only (meta/runtime.yml admits both).
_HOST_VIEW_TAKES_HOST = "host" in inspect.signature(HostVarsVars.__init__).parameters


def _host_view(raw: dict[str, Any], loader, host: str) -> HostVarsVars:
    """A host's variables, templated when read, as hostvars[host] gives them."""
    if _HOST_VIEW_TAKES_HOST:
        return HostVarsVars(raw, loader=loader, host=host)
    return HostVarsVars(raw, loader=loader)  # pylint: disable=no-value-for-parameter


def _role_variable_names(roles_dir: str = ROLES_DIR) -> frozenset:
    """Every variable a role of the collection sets or takes (defaults, vars, argument specs): known names, so only a
    name no role knows can be a misspelt setting of a playbook. Read once per process."""
    if roles_dir not in _KNOWN:
        names: set[str] = set()
        for path in glob.glob(os.path.join(roles_dir, "*", "defaults", "main.yml")) + \
                glob.glob(os.path.join(roles_dir, "*", "vars", "main.yml")):
            with open(path, encoding="utf-8") as handle:
                names.update((yaml.safe_load(handle) or {}).keys())
        for path in glob.glob(os.path.join(roles_dir, "*", "meta", "argument_specs.yml")):
            with open(path, encoding="utf-8") as handle:
                for entry in ((yaml.safe_load(handle) or {}).get("argument_specs") or {}).values():
                    names.update((entry or {}).get("options") or {})
        _KNOWN[roles_dir] = frozenset(names)
    return _KNOWN[roles_dir]


_KNOWN: dict[str, frozenset] = {}


def _etcdutl_status(etcdutl):
    """etcdutl snapshot status on the controller, as (it read the snapshot, what it said)."""
    def status(path):
        try:
            done = subprocess.run([etcdutl, "snapshot", "status", path, "--write-out=json"], capture_output=True,
                                  text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            return False, str(err)
        said = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        return done.returncode == 0, (said[-1] if said else f"exit {done.returncode}")[:300]
    return status


class LocalBundle:
    """Reads a bundle directory, and files the settings name, on the controller for the model."""

    def __init__(self, find=None, checksums=None):
        self._find = find
        # The bundle's files are hashed again only when they changed (module_utils/_file_checksums.py).
        self._checksums = checksums if checksums is not None else ChecksumCache(default_cache_path())

    def manifest(self, bundle_dir):
        path = os.path.join(bundle_dir, "manifest.yml")
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)

    def checksum(self, path):
        return self._checksums.sha256(path)

    def save(self):
        self._checksums.save()

    def yaml_file(self, path):
        here = controller_path(path)
        try:
            found = here if os.path.isfile(here) or not self._find else self._find(path)
        except AnsibleError:
            return None, (f"is not found: looked for {here} (a relative path is read from the directory ansible-playbook "
                          "runs in), then as lookup('file') does (the playbook's files/ directory, then the playbook's directory)")
        if not os.path.isfile(found):
            return None, "is not found"
        try:
            with open(found, encoding="utf-8") as handle:
                return yaml.safe_load(handle), None
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            return None, f"cannot be read as YAML ({str(err).splitlines()[0]})"

    @staticmethod
    def url_exists(url):
        """Whether the file server has this file: True or False when it answered, None when the controller
        did not reach it (the nodes may still: they download, not the controller)."""
        for method in ("HEAD", "GET"):
            try:
                with open_url(url, method=method, timeout=5, follow_redirects="safe"):
                    return True
            except HTTPError as err:
                if err.code in (404, 410):
                    return False
                if err.code not in (403, 405, 501):
                    return None
            except (URLError, UrlConnectionError, OSError, ValueError):
                # Any other failure (no route, DNS, TLS, timeout) means no answer, not "missing".
                return None
        return None


# Host variables the model reads; nothing else of hostvars is templated.
HOST_VARIABLES = ("ip", "ansible_host", "access_ip")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def _value(self, value):
        """The templated value; a template that cannot be rendered here (kubespray's use filters and
        variables of its own) is kept as written, so it is still named if it is not ours."""
        try:
            return self._templar.template(value)
        except AnsibleError:
            return value

    @staticmethod
    def _failed(result, problems, title="The inventory has", warnings=()):
        result["failed"] = True
        result["msg"] = format_problems(problems, f"{title} {len(problems)} problem(s); nothing was changed on any host:")
        if warnings:
            # What a run that got past the problems would warn of, said now: the fix of one may be the other's.
            result["msg"] += "\n" + format_problems(list(warnings), f"and {len(warnings)} warning(s), which do not stop a run:")
        return result

    @staticmethod
    def _cluster_wide_differences(values):
        """Cluster-wide settings (slipway_*, and the role variables the model checks) that differ between hosts:
        set in host_vars, or in the group_vars of a group other than all, where the model, built once for the
        run, would use one host's value for every host. ``values``: {name: {repr of the value as written: hosts}}."""
        found = []
        for key, by_value in sorted(values.items()):
            if len(by_value) < 2:
                continue
            # The intended value: none (the setting is for group_vars/all or -e, so the hosts that have it are the
            # odd ones), else the value most hosts have. The others are named.
            ranked = sorted(by_value.items(), key=lambda item: (item[0] != "(not set)", -len(item[1])))
            others = "; ".join(f"{', '.join(hosts[:10])}{' ...' if len(hosts) > 10 else ''} {value}"
                               for value, hosts in ranked[1:])
            found.append(Problem(key, f"is cluster-wide but differs between hosts: {others}, the other {len(ranked[0][1])} "
                                      f"host(s) {ranked[0][0]}; set it once, in group_vars/all or with -e, not in "
                                      "host_vars or the group_vars of another group"))
        return found

    def _day2(self, col, playbook, task_vars, model):
        """The day-2 playbook's own settings, the run (-e, --limit) and the files it names on the controller."""
        try:
            given = load_extra_vars(self._loader)
        except AnsibleError:
            given = {}
        schema = PLAYBOOK_SETTINGS.get(playbook, {})
        prefixes = PREFIXES.get(playbook, ())
        values = {}
        for key in task_vars:
            if key in schema or (prefixes and key.startswith(prefixes)) or key in given:
                values[key] = self._value(task_vars[key])
        known = _role_variable_names() | frozenset(name for names in PLAYBOOK_SETTINGS.values() for name in names)
        run = Run(playbook=playbook, values=values, known=known, given=[key for key in given if key != "_raw_params"],
                  raw_params=given.get("_raw_params"), limit=str(task_vars.get("ansible_limit") or ""),
                  play_hosts=list(task_vars.get("ansible_play_hosts_all") or []),
                  role_defaults=role_defaults_of({setting.role for setting in schema.values() if setting.role}),
                  groups=task_vars.get("groups") or {})
        checked = check_playbook(col, run, model)
        snapshot = checked.get("etcd_snapshot")
        if snapshot:
            path = controller_path(snapshot)
            cluster = model["name"] if model else str(self._value(task_vars.get("slipway_cluster_name", "slipway")))
            etcd_mode = model["etcd_mode"] if model else str(self._value(task_vars.get("slipway_etcd_mode", "stacked")))
            etcdutl = None
            if model and model.get("artifacts_source") == "bundle":
                candidate = os.path.join(str(model["artifacts"].get("bundle_dir") or ""), "bin", "etcdutl")
                etcdutl = _etcdutl_status(candidate) if os.access(candidate, os.X_OK) else None
            found = check_snapshot_file(col, "etcd_snapshot", path, cluster, etcd_mode, etcdutl)
            checked["etcd_snapshot_file"] = {key: found[key] for key in ("path", "exists", "sha256", "metadata")}
        return checked

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        validation = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[0]
        settings = {}
        for key in task_vars:
            if key in OWN_VARIABLES or key.startswith(OWN_PREFIXES):
                continue
            if key.startswith("slipway_") or key in ROLE_VARIABLE_NAMES or key in KUBESPRAY:
                settings[key] = self._value(task_vars[key])
        settings.update(validation.validated_parameters["settings"])
        bundle_dir = settings.get("slipway_artifacts_bundle_dir")
        if bundle_dir and isinstance(bundle_dir, str):
            # Relative: from the directory ansible-playbook runs in, else (as before) the inventory's, like kubespray's
            # artifacts directory; a message then names the directory looked for.
            settings["slipway_artifacts_bundle_dir"] = controller_path(bundle_dir, [task_vars.get("inventory_dir") or ""])
        bundle = LocalBundle(lambda path: self._find_needle("files", path))
        if validation.validated_parameters["scope"] == "settings":
            try:
                warnings = check_settings(settings, bundle=bundle)
            except ModelError as err:
                return self._failed(result, err.problems, "The settings have", err.warnings)
            finally:
                bundle.save()
            for warning in warnings:
                self._display.warning(warning)
            result["changed"] = False
            return result
        groups = task_vars.get("groups", {})
        hostvars = task_vars.get("hostvars", {})
        wanted: set[str] = set()
        for group in ("kube_control_plane", "kube_node", "etcd", "loadbalancer"):
            wanted.update(groups.get(group) or [])
        host_settings = {}
        values: dict[str, Any] = {}
        for host in sorted(wanted):
            # One lookup per host: it computes all of that host's variables, as written; only the few the
            # model reads are templated.
            raw = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else hostvars[host]
            variables = _host_view(raw, self._loader, host)
            host_settings[host] = {key: variables.get(key) for key in HOST_VARIABLES if variables.get(key) is not None}
            for key in raw:
                if (key.startswith("slipway_") or key in ROLE_VARIABLE_NAMES) and key not in OWN_VARIABLES \
                        and not key.startswith(OWN_PREFIXES):
                    values.setdefault(key, {}).setdefault(repr(raw[key]), []).append(host)
        for by_value in values.values():
            unset = sorted(wanted - {host for hosts in by_value.values() for host in hosts})
            if unset:
                by_value["(not set)"] = unset
        per_host = self._cluster_wide_differences(values)
        model, failure = None, None
        try:
            model = build_model(groups, host_settings, settings, bundle=bundle,
                                exclude=validation.validated_parameters["exclude"], check_k8s_cluster=True)
        except ModelError as err:
            failure = err
        finally:
            bundle.save()
        day2 = Collector()
        playbook = validation.validated_parameters["playbook"]
        if playbook != "site":
            model_settings = self._day2(day2, playbook, task_vars, model)
            if model is not None:
                model["playbook"] = {"name": playbook, "settings": model_settings}
        problems = per_host + (failure.problems if failure else []) + day2.problems
        if problems or model is None:
            return self._failed(result, problems, "The inventory has" if playbook == "site" else "The run has",
                                warnings=(failure.warnings if failure else []) + day2.warnings)
        result["changed"] = False
        if validation.validated_parameters["as_fact"]:
            result["ansible_facts"] = {"slipway_cluster": model}
        else:
            result["model"] = model
        if model["kubespray_ignored"]:
            self._display.display(
                "kubespray settings not read, as slipway.cluster does the same already: " + ", ".join(model["kubespray_ignored"]),
                color=None)
        for warning in model["warnings"] + [str(warning) for warning in day2.warnings]:
            self._display.warning(warning)
        return result
