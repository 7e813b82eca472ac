# Copyright: slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Judge every node's facts against the cluster model on the controller and report all problems at once."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url
from ansible.plugins.action import ActionBase

from ansible_collections.slipway.cluster.plugins.module_utils._artifacts import ARCHES, release_problems
from ansible_collections.slipway.cluster.plugins.module_utils._paths import controller_cache_dir
from ansible_collections.slipway.cluster.plugins.module_utils._host_checks import (
    DEFAULT_OPTIONS,
    check_hosts,
    node_summary,
    unanswered,
)
from ansible_collections.slipway.cluster.plugins.module_utils._problems import format_problems

ARGUMENT_SPEC = {
    "model": {"type": "dict", "required": True},
    "facts_var": {"type": "str", "required": True},
    "options": {"type": "dict", "default": {}},
    "hosts": {"type": "list", "elements": "str"},
    "as_fact": {"type": "bool", "default": True},
}


class ReleaseFiles:
    """Reads release files from their server on the controller and hashes them, keeping nothing but the record of
    each URL found with the sha256 the collection pins (a rerun reads it not again: the nodes check the same sum
    when they download)."""

    def __init__(self, path=None):
        self.path = path or os.path.join(controller_cache_dir(), "release-files.json")
        try:
            with open(self.path, encoding="utf-8") as handle:
                self.verified = set(json.load(handle))
        except (OSError, ValueError, TypeError):
            self.verified = set()
        self.new = set()

    def fetch(self, url, pinned):
        if f"{url} {pinned}" in self.verified:
            return pinned, None
        digest = hashlib.sha256()
        try:
            with open_url(url, timeout=60, follow_redirects="safe") as response:
                for chunk in iter(lambda: response.read(1 << 20), b""):
                    digest.update(chunk)
        except HTTPError as err:
            return None, f"HTTP {err.code} {err.reason}"
        except (URLError, UrlConnectionError, OSError, ValueError) as err:
            return None, str(getattr(err, "reason", None) or err)
        found = digest.hexdigest()
        if found == pinned:
            self.new.add(f"{url} {pinned}")
        return found, None

    def save(self):
        if not self.new:
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(self.path), delete=False, encoding="utf-8") as out:
                json.dump(sorted(self.verified | self.new), out)
            os.replace(out.name, self.path)
        except OSError:
            pass  # the files are read again next time


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        validation = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[0]
        args = validation.validated_parameters
        unknown = sorted(set(args["options"]) - set(DEFAULT_OPTIONS))
        if unknown:
            raise AnsibleActionFail(f"unknown host check option(s): {', '.join(unknown)}")
        model = args["model"]
        hostvars = task_vars.get("hostvars", {})
        checked = set(args["hosts"] if args["hosts"] is not None else model["nodes"])
        in_scope = {**model, "nodes": {name: node for name, node in model["nodes"].items() if name in checked}}
        facts = {}
        reasons = {}
        for host in in_scope["nodes"]:
            registered = hostvars[host].get(args["facts_var"]) if host in hostvars else None
            if isinstance(registered, dict) and not registered.get("failed") and "node_facts" in registered:
                facts[host] = registered["node_facts"]
            elif isinstance(registered, dict):
                # Unreachable (ignore_unreachable, or the node_facts action's slipway_unreachable) or failed
                # (failed_when: false): Ansible's own reason.
                reasons[host] = unanswered(host, registered.get("msg") or registered.get("module_stderr"),
                                           bool(registered.get("unreachable") or registered.get("slipway_unreachable")))
        problems, warnings = check_hosts(in_scope, facts, args["options"], reasons)
        # The release files of the architectures the nodes have, read on the controller before any host changes.
        artifacts = model.get("artifacts") or {}
        arches = sorted({ARCHES[fact["arch"]] for fact in facts.values() if fact.get("arch") in ARCHES})
        files = ReleaseFiles()
        wanted = {entry["files"][arch]["url"]: entry["files"][arch]["sha256"]
                  for entry in [*(artifacts.get("binaries") or []), *(artifacts.get("archives") or {}).values()]
                  if "files" in entry for arch in arches}
        problems += release_problems(artifacts, arches, lambda url: files.fetch(url, wanted[url]))
        files.save()
        result["warnings_found"] = [str(w) for w in warnings]
        for warning in warnings:
            self._display.warning(str(warning))
        if problems:
            result["failed"] = True
            result["msg"] = format_problems(
                problems, f"The hosts have {len(problems)} problem(s); nothing was changed on any host:"
            )
            return result
        nodes = {
            name: {**node, "facts": node_summary(facts[name])} if name in facts else node
            for name, node in model["nodes"].items()
        }
        result["changed"] = False
        completed = {**model, "nodes": nodes, "warnings": model["warnings"] + result["warnings_found"]}
        if args["as_fact"]:
            result["ansible_facts"] = {"slipway_cluster": completed}
        else:
            result["model"] = completed
        return result
