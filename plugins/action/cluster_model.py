# Copyright: slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Build the validated cluster model on the controller, before any host is contacted."""

from __future__ import annotations

import hashlib
import os

import yaml

from ansible.plugins.action import ActionBase

from ansible_collections.slipway.cluster.plugins.module_utils._model import (
    DEFAULT_SETTINGS,
    ModelError,
    build_model,
    format_problems,
)

ARGUMENT_SPEC = {
    "settings": {"type": "dict", "default": {}},
    "exclude": {"type": "list", "elements": "str", "default": []},
}


class LocalBundle:
    """Reads a bundle directory on the controller for the model."""

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


# Host variables the model reads; nothing else of hostvars is templated.
HOST_VARIABLES = ("ip", "ansible_host", "access_ip")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        validation = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[0]
        settings = {key: self._templar.template(task_vars[key]) for key in DEFAULT_SETTINGS if key in task_vars}
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
        host_settings = {
            host: {key: hostvars[host].get(key) for key in HOST_VARIABLES if hostvars[host].get(key) is not None}
            for host in wanted
        }
        try:
            model = build_model(groups, host_settings, settings, bundle=LocalBundle(),
                                exclude=validation.validated_parameters["exclude"])
        except ModelError as err:
            result["failed"] = True
            result["msg"] = format_problems(
                err.problems,
                f"The inventory has {len(err.problems)} problem(s); nothing was changed on any host:",
            )
            return result
        result["changed"] = False
        result["ansible_facts"] = {"slipway_cluster": model}
        for warning in model["warnings"]:
            self._display.warning(warning)
        return result
