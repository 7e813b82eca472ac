# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""What the cluster_configuration, cluster_configuration_info and component_status modules do.

Each module's main() builds its AnsibleModule from the argument specs here and calls the matching
run_* function, which reads the resource, decides with the pure logic in _cluster_configuration,
writes only when something differs (never in check mode) and exits the module.
"""

from __future__ import annotations

import copy
import os
import traceback
from typing import Any

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.slipway.cluster.plugins.module_utils import _cluster_configuration as cc
from ansible_collections.slipway.cluster.plugins.module_utils._cluster_configuration_api import RESOURCE_ARG_SPEC, ClusterConfigurationApi
from ansible_collections.slipway.cluster.plugins.module_utils._k8s import AUTH_ARG_SPEC, K8sError, api_client_or_fail

YAML_IMPORT_ERROR = None
try:
    import yaml
except ImportError:
    YAML_IMPORT_ERROR = traceback.format_exc()
    HAS_YAML = False
else:
    HAS_YAML = True


def _argument_spec(own: "dict[str, dict[str, Any]]") -> "dict[str, dict[str, Any]]":
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(copy.deepcopy(RESOURCE_ARG_SPEC))
    spec.update(own)
    return spec


CLUSTER_CONFIGURATION_ARGS = dict(
    argument_spec=_argument_spec({
        "definition": {"type": "raw"},
        "spec": {"type": "dict"},
        "src": {"type": "path"},
        "merge_type": {"type": "str", "default": "merge", "choices": ["merge", "replace"]},
    }),
    mutually_exclusive=[("definition", "spec", "src")],
    required_one_of=[("definition", "spec", "src")],
    supports_check_mode=True,
)

CLUSTER_CONFIGURATION_INFO_ARGS = dict(
    argument_spec=_argument_spec({
        "spec": {"type": "dict"},
    }),
    supports_check_mode=True,
)

COMPONENT_STATUS_ARGS = dict(
    argument_spec=_argument_spec({
        "component": {"type": "str", "required": True, "choices": list(cc.COMPONENT_NAMES)},
        "status": {"type": "str", "required": True, "choices": list(cc.STATUSES)},
        "reason": {"type": "str"},
        "spec_hash": {"type": "str"},
    }),
    required_if=[("status", cc.STATUS_FAILED, ("reason",))],
    supports_check_mode=True,
)


def connect(module) -> ClusterConfigurationApi:
    """The API for the module's ClusterConfiguration; fails the module when that cannot be."""
    api_client = api_client_or_fail(module)
    return ClusterConfigurationApi(api_client, name=module.params["name"], namespace=module.params["namespace"])


def _fail(module, exc: K8sError) -> None:
    module.fail_json(msg=exc.msg, api_status=exc.status, api_reason=exc.reason, api_body=exc.body)


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _parts(obj: "dict | None") -> "tuple[dict, dict, dict, int | None]":
    obj = obj or {}
    metadata = _mapping(obj.get("metadata"))
    return _mapping(obj.get("spec")), _mapping(obj.get("status")), _mapping(metadata.get("labels")), metadata.get("generation")


class ClusterConfigurationManager:
    """Creates the ClusterConfiguration or merges the wanted spec into it (community.docker style:
    compare existing with wanted, record what differs, skip the API call in check mode)."""

    def __init__(self, module, api: ClusterConfigurationApi):
        self.module = module
        self.api = api
        self.params = module.params

    def _load_documents(self) -> "list[Any]":
        if not HAS_YAML:
            self.module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
        src = self.params["src"]
        if src is not None:
            if not os.path.isfile(src):
                self.module.fail_json(msg="src %s is not a file on this host" % src)
            try:
                with open(src, "rb") as handle:
                    return list(yaml.safe_load_all(handle))
            except (OSError, yaml.YAMLError) as exc:
                self.module.fail_json(msg="cannot read %s: %s" % (src, to_native(exc)))
        try:
            return list(yaml.safe_load_all(self.params["definition"]))
        except yaml.YAMLError as exc:
            self.module.fail_json(msg="definition is not valid YAML: %s" % to_native(exc))
        return []

    def wanted(self) -> "tuple[dict, dict]":
        """The spec and labels the task asks for."""
        if self.params["spec"] is not None:
            return self.params["spec"], {}
        definition = self.params["definition"]
        if definition is None or isinstance(definition, str):
            documents = self._load_documents()
            try:
                definition = cc.select_cluster_configuration(documents)
            except ValueError as exc:
                where = self.params["src"] or "definition"
                self.module.fail_json(msg="%s: %s" % (where, exc))
        elif isinstance(definition, list):
            try:
                definition = cc.select_cluster_configuration(definition)
            except ValueError as exc:
                self.module.fail_json(msg="definition: %s" % exc)
        problems = cc.check_definition(definition, self.params["name"], self.params["namespace"])
        if problems:
            self.module.fail_json(msg="the ClusterConfiguration definition is not usable: " + "; ".join(problems),
                                  problems=problems)
        labels = (definition.get("metadata") or {}).get("labels") or {}
        return definition.get("spec") or {}, labels

    def run(self) -> None:
        spec_given, labels_given = self.wanted()
        merge_type = self.params["merge_type"]
        check_mode = self.module.check_mode
        try:
            self.api.require_served()
            existing = self.api.get()
            if existing is None:
                spec = cc.desired_spec({}, spec_given, merge_type)
                body: dict[str, Any] = {
                    "apiVersion": cc.API_VERSION,
                    "kind": cc.KIND,
                    "metadata": {"name": self.api.name, "namespace": self.api.namespace},
                    "spec": spec,
                }
                if labels_given:
                    body["metadata"]["labels"] = dict(labels_given)
                result = body if check_mode else self.api.create(body)
                before, created, changed = {}, True, True
                predicted_generation: int | None = 1
            else:
                old_spec, dummy_status, old_labels, old_generation = _parts(existing)
                spec = cc.desired_spec(old_spec, spec_given, merge_type)
                patch = {}
                spec_patch = cc.make_merge_patch(old_spec, spec)
                if spec_patch:
                    patch["spec"] = spec_patch
                label_patch = {key: value for key, value in labels_given.items() if old_labels.get(key) != value}
                if label_patch:
                    patch["metadata"] = {"labels": label_patch}
                changed, created = bool(patch), False
                before = {"spec": old_spec, "labels": old_labels}
                predicted_generation = (old_generation or 0) + 1 if spec_patch else old_generation
                if changed and not check_mode:
                    result = self.api.patch(patch)
                else:
                    result = cc.apply_merge_patch(existing, patch)
        except K8sError as exc:
            _fail(self.module, exc)
        new_spec, new_status, new_labels, generation = _parts(result)
        if check_mode or generation is None:
            generation = predicted_generation
        output = dict(changed=changed, created=created, spec=new_spec, status=new_status,
                      generation=generation, labels=new_labels)
        if self.module._diff:
            output["diff"] = {
                "before": before,
                "after": {"spec": new_spec, "labels": new_labels},
                "before_header": "%s/%s" % (self.api.namespace, self.api.name),
                "after_header": "%s/%s" % (self.api.namespace, self.api.name),
            }
        self.module.exit_json(**output)


def run_cluster_configuration(module) -> None:
    ClusterConfigurationManager(module, connect(module)).run()


def run_cluster_configuration_info(module) -> None:
    api = connect(module)
    try:
        info = api.resource_info()
        obj = api.get() if info["served"] else None
    except K8sError as exc:
        _fail(module, exc)
    spec, status, labels, generation = _parts(obj)
    if module.params["spec"] is not None:
        spec = module.params["spec"]
    planned = []
    if obj is not None or module.params["spec"] is not None:
        planned = cc.plan(spec, status)
    module.exit_json(
        changed=False,
        crd_installed=info["served"],
        status_subresource=info["status_subresource"],
        exists=obj is not None,
        spec=spec,
        status=status,
        labels=labels,
        generation=generation,
        plan=planned,
        actions=cc.summarize(planned),
    )


def run_component_status(module) -> None:
    api = connect(module)
    component = cc.COMPONENTS[module.params["component"]]
    try:
        info = api.require_served()
        obj = api.get()
        if obj is None:
            module.fail_json(msg="ClusterConfiguration %s/%s does not exist: create it first "
                                 "(slipway.cluster.cluster_configuration)" % (api.namespace, api.name))
        spec, status, dummy_labels, dummy_generation = _parts(obj)
        digest = module.params["spec_hash"] or cc.spec_hash(spec, component)
        try:
            changed, patch, before, after = cc.status_update(
                status, component, module.params["status"], digest, module.params["reason"], cc.rfc3339_now())
        except ValueError as exc:
            module.fail_json(msg=to_native(exc))
        if changed and patch is not None and not module.check_mode:
            result = api.patch_status(patch, info["status_subresource"])
            dummy_spec, new_status, dummy_labels, dummy_generation = _parts(result)
            written = cc.status_entry(new_status, component)
            if written is None or written.get("status") != module.params["status"]:
                module.fail_json(msg="the API server accepted the status patch of %s/%s but did not keep it: does its CRD "
                                     "have a status subresource the discovery did not show?" % (api.namespace, api.name))
            after = written
    except K8sError as exc:
        _fail(module, exc)
    path = "status." + ".".join(component.status_path)
    output = dict(
        changed=changed,
        component=component.name,
        status_path=path,
        status_subresource=info["status_subresource"],
        spec_hash=None if module.params["status"] == cc.STATUS_DISABLED else digest,
        previous=before,
        entry=after,
    )
    if module._diff:
        output["diff"] = {"before": before or {}, "after": after or {}, "before_header": path, "after_header": path}
    module.exit_json(**output)
