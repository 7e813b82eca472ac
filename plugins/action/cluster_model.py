# Copyright: slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Build the validated cluster model on the controller, before any host is contacted."""

from __future__ import annotations

import hashlib
import os

import yaml

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.slipway.cluster.plugins.module_utils._kubespray import KUBESPRAY
from ansible_collections.slipway.cluster.plugins.module_utils._model import (
    OWN_PREFIXES,
    OWN_VARIABLES,
    ROLE_DEFAULTS,
    ModelError,
    build_model,
    format_problems,
)

ARGUMENT_SPEC = {
    "settings": {"type": "dict", "default": {}},
    "exclude": {"type": "list", "elements": "str", "default": []},
    "as_fact": {"type": "bool", "default": True},
}


class LocalBundle:
    """Reads a bundle directory, and files the settings name, on the controller for the model."""

    def __init__(self, find=None):
        self._find = find

    def manifest(self, bundle_dir):
        path = os.path.join(bundle_dir, "manifest.yml")
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)

    def checksum(self, path):
        if not os.path.isfile(path):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    def yaml_file(self, path):
        try:
            found = self._find(path) if self._find else path
        except AnsibleError:
            return None, "is not found (relative paths are looked up like lookup('file') does: the playbook's files/ directory, then the playbook's directory)"
        if not os.path.isfile(found):
            return None, "is not found"
        try:
            with open(found, encoding="utf-8") as handle:
                return yaml.safe_load(handle), None
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            return None, f"cannot be read as YAML ({str(err).splitlines()[0]})"


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

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        validation = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[0]
        settings = {}
        for key in task_vars:
            if key in OWN_VARIABLES or key.startswith(OWN_PREFIXES):
                continue
            if key.startswith("slipway_") or key in ROLE_DEFAULTS or key in KUBESPRAY:
                settings[key] = self._value(task_vars[key])
        settings.update(validation.validated_parameters["settings"])
        bundle_dir = settings.get("slipway_artifacts_bundle_dir")
        if bundle_dir and not os.path.isabs(bundle_dir):
            # Relative to the inventory, like kubespray's artifacts directory.
            settings["slipway_artifacts_bundle_dir"] = os.path.normpath(os.path.join(task_vars.get("inventory_dir") or ".", bundle_dir))
        groups = task_vars.get("groups", {})
        hostvars = task_vars.get("hostvars", {})
        wanted = set()
        for group in ("kube_control_plane", "kube_node", "etcd", "loadbalancer"):
            wanted.update(groups.get(group) or [])
        host_settings = {}
        for host in wanted:
            # One lookup per host: each hostvars[host] computes all of that host's variables.
            variables = hostvars[host]
            host_settings[host] = {key: variables.get(key) for key in HOST_VARIABLES if variables.get(key) is not None}
        try:
            model = build_model(groups, host_settings, settings, bundle=LocalBundle(lambda path: self._find_needle("files", path)),
                                exclude=validation.validated_parameters["exclude"], check_k8s_cluster=True)
        except ModelError as err:
            result["failed"] = True
            result["msg"] = format_problems(
                err.problems,
                f"The inventory has {len(err.problems)} problem(s); nothing was changed on any host:",
            )
            return result
        result["changed"] = False
        if validation.validated_parameters["as_fact"]:
            result["ansible_facts"] = {"slipway_cluster": model}
        else:
            result["model"] = model
        if model["kubespray_ignored"]:
            self._display.display(
                "kubespray settings not read, as slipway.cluster does the same already: " + ", ".join(model["kubespray_ignored"]),
                color=None)
        for warning in model["warnings"]:
            self._display.warning(warning)
        return result
