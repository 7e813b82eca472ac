#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: files
short_description: Put a set of directories and files with given contents in place in one round-trip
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Makes sure each directory exists and each file holds exactly the given content, with the given
    owner, group and mode, all in one module call.
  - A role that would otherwise run M(ansible.builtin.file) in a loop and M(ansible.builtin.template)
    once per file (two module calls each) asks the node once. On a rerun with nothing to change that is
    one round-trip per host instead of one or two per path.
  - Render templates on the controller with the P(ansible.builtin.template#lookup) lookup and pass the
    result as O(files[].content).
  - Directories are handled first, in the order given, then files. The missing parents of a directory are
    created with that directory's owner, group and mode, as M(ansible.builtin.file) does; the missing parents
    of a file with O(directory_mode) and the file's owner and group.
  - A file is replaced atomically; a temporary file in the same directory gets the final owner, group
    and mode before it is renamed over the path, so a secret file is never readable by others, not even
    for a moment. A symbolic link at a file's path is followed, so the file it points to is written.
options:
  directories:
    description:
      - Directories that must exist.
      - Each is an absolute path, or a dictionary with C(path) and optionally C(owner), C(group) and C(mode).
    type: list
    elements: raw
    default: []
  files:
    description: Files that must hold exactly the given content.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Where the file goes.
        type: path
        required: true
      content:
        description:
          - The whole content of the file, for example
            V("{{ lookup('ansible.builtin.template', 'kubelet.service.j2') }}").
          - Exactly one of O(files[].content) and O(files[].src) is required.
        type: str
      src:
        description:
          - A file on the node whose content this file must hold, as M(ansible.builtin.copy) with C(remote_src).
          - The task fails when it does not exist.
        type: path
      owner:
        description: Owner of the file. Defaults to O(owner).
        type: str
      group:
        description: Group of the file. Defaults to O(group).
        type: str
      mode:
        description: Permissions of the file, as an octal string such as V("0600"). Defaults to O(file_mode).
        type: raw
      validate:
        description:
          - A command that checks the new content before it replaces the file, with V(%s) where the path
            of the temporary file goes, for example V(haproxy -c -f %s).
          - Run only when the content changes. When it fails, the file is left as it was and the task
            fails with the command's output.
          - Split like a shell command line, but run without a shell.
        type: str
      secret:
        description:
          - The content is secret (a password, a token, a private key).
          - Diff mode then shows that the file changes, never what it held or holds.
          - Use C(no_log) on the task as well, so that the arguments are not logged either.
        type: bool
        default: false
  owner:
    description: Owner of every path that does not name its own.
    type: str
  group:
    description: Group of every path that does not name its own.
    type: str
  file_mode:
    description: Permissions of every file that does not name its own.
    type: raw
    default: "0644"
  directory_mode:
    description: Permissions of every directory that does not name its own, and of missing parents.
    type: raw
    default: "0755"
attributes:
  check_mode:
    support: full
    description: Reports which paths would be created or changed, and how, without touching any.
  diff_mode:
    support: full
    description:
      - One diff per changed path, with the content of a file before and after, and the owner, group and
        mode that change.
      - The content of a file marked O(files[].secret) is never shown.
notes:
  - The task is changed when any path is created or changed; RV(changed_paths) says which ones, for
    handlers that should run only when a given file changed.
seealso:
  - module: ansible.builtin.template
  - module: ansible.builtin.file
"""

EXAMPLES = r"""
- name: Install the kubelet's units and flags
  slipway.cluster.files:
    owner: root
    group: root
    directories:
      - /etc/systemd/system/kubelet.service.d
      - path: /var/lib/kubelet
        mode: "0700"
    files:
      - path: /etc/systemd/system/kubelet.service
        content: "{{ lookup('ansible.builtin.template', 'kubelet.service.j2') }}"
      - path: /etc/default/kubelet
        content: "KUBELET_EXTRA_ARGS=--node-ip={{ node_ip }}\n"
      # A copy of a file on the node.
      - path: /root/.kube/config
        src: /etc/kubernetes/admin.conf
        mode: "0600"
        secret: true
  register: kubelet_files
  notify: Restart kubelet

- name: Write a file holding a password, showing no diff of it
  slipway.cluster.files:
    files:
      - path: /etc/example/credentials.toml
        content: "{{ lookup('ansible.builtin.template', 'credentials.toml.j2') }}"
        mode: "0600"
        secret: true
  no_log: true
"""

RETURN = r"""
changed_paths:
  description: The paths this task created or changed (or would, in check mode), in the order given.
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/kubelet.service]
created_paths:
  description: The paths among RV(changed_paths) that did not exist before.
  returned: always
  type: list
  elements: str
  sample: []
"""

import os
import shlex
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native


def _entry(module: AnsibleModule, raw, kind: str) -> dict:
    """A directory entry as a dictionary with path, owner, group and mode."""
    params = module.params
    if isinstance(raw, str):
        raw = {"path": raw}
    if not isinstance(raw, dict) or not raw.get("path"):
        module.fail_json(msg=f"Each entry of {kind} must be a path or a dictionary with a path, not {raw!r}.")
    unknown = sorted(set(raw) - {"path", "owner", "group", "mode"})
    if unknown:
        module.fail_json(msg=f"The {kind} entry {raw['path']} has unknown keys: {', '.join(unknown)}. "
                             "Use path, owner, group and mode.")
    return {
        "path": str(raw["path"]),
        "owner": raw.get("owner") or params["owner"],
        "group": raw.get("group") or params["group"],
        "mode": raw.get("mode") or params["directory_mode"],
    }


def _file_args(path: str, entry: dict) -> dict:
    return {"path": path, "owner": entry["owner"], "group": entry["group"], "mode": entry["mode"],
            "secontext": None, "attributes": None}


def _read(path: str):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


class Files:
    def __init__(self, module: AnsibleModule):
        self.module = module
        self.changed: list = []
        self.created: list = []
        self.diffs: list = []
        # Directories made in check mode, so that their files and children count as new too.
        self.planned: set = set()

    def _exists(self, path: str) -> bool:
        return path in self.planned or os.path.lexists(path)

    def _attributes(self, path: str, entry: dict, diff: dict) -> bool:
        if path in self.planned:
            return False
        return self.module.set_fs_attributes_if_different(_file_args(path, entry), False, diff)

    def _mark(self, path: str, created: bool, diff: dict) -> None:
        self.changed.append(path)
        if created:
            self.created.append(path)
        if self.module._diff:
            self.diffs.append(diff)

    def directory(self, entry: dict) -> None:
        path = entry["path"]
        missing = []
        current = path
        while not self._exists(current):
            missing.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        if self._exists(path) and not os.path.isdir(path) and path not in self.planned:
            self.module.fail_json(msg=f"{path} is not a directory; move it away or remove it.", path=path)
        for new in reversed(missing):
            if not self.module.check_mode:
                try:
                    os.mkdir(to_bytes(new))
                except OSError as err:
                    self.module.fail_json(msg=f"Could not create the directory {new}: {to_native(err)}", path=new)
                self._attributes(new, entry, {})
            else:
                self.planned.add(new)
            self._mark(new, True, {"before_header": new, "after_header": new,
                                   "before": {"path": new, "state": "absent"},
                                   "after": {"path": new, "state": "directory"}})
        if not missing:
            diff = {"before_header": path, "after_header": path, "before": {"path": path}, "after": {"path": path}}
            if self._attributes(path, entry, diff):
                self._mark(path, False, diff)

    def file(self, spec: dict) -> None:
        params = self.module.params
        entry = {"owner": spec.get("owner") or params["owner"], "group": spec.get("group") or params["group"],
                 "mode": spec.get("mode") or params["file_mode"]}
        path = spec["path"]
        if os.path.islink(path):
            path = os.path.realpath(path)
        parent = os.path.dirname(path) or "."
        if not self._exists(parent):
            self.directory({"path": parent, "owner": entry["owner"], "group": entry["group"],
                            "mode": params["directory_mode"]})
        if self._exists(path) and os.path.isdir(path):
            self.module.fail_json(msg=f"{path} is a directory, where a file should go; move it away.", path=path)
        if spec.get("src") is not None:
            content = _read(spec["src"])
            if content is None:
                self.module.fail_json(msg=f"{spec['src']}, the source of {path}, does not exist on the node.", path=path)
        else:
            content = to_bytes(spec["content"], errors="surrogate_or_strict")
        before = None if path in self.planned else _read(path)
        created = before is None
        diff = {"before_header": path, "after_header": path}
        if before != content:
            if spec["secret"]:
                diff.update(before="" if created else "(secret content)\n", after="(secret content, changed)\n")
            else:
                diff.update(before="" if before is None else before.decode("utf-8", "replace"),
                            after=content.decode("utf-8", "replace"))
            if not self.module.check_mode:
                self._write(path, content, entry, spec.get("validate"))
            self._mark(path, created, diff)
            return
        attributes = {"before_header": path, "after_header": path, "before": {"path": path}, "after": {"path": path}}
        if self._attributes(path, entry, attributes):
            self._mark(path, False, attributes)

    def _write(self, path: str, content: bytes, entry: dict, validate=None) -> None:
        """Write a temporary file beside ``path`` (mode 0600 from the start), give it its final owner,
        group and mode, then rename it over ``path``: no reader ever sees a partial file, or a secret
        file with looser permissions."""
        directory = os.path.dirname(path) or "."
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".slipway-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(content)
                out.flush()
                os.fsync(out.fileno())
            try:
                current = os.stat(path)
                os.chown(temporary, current.st_uid, current.st_gid)
            except FileNotFoundError:
                pass
            self.module.set_fs_attributes_if_different(_file_args(temporary, entry), False)
            if validate:
                self._validate(path, temporary, validate)
            os.rename(temporary, path)
        except OSError as err:
            self.module.fail_json(msg=f"Could not write {path}: {to_native(err)}", path=path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)

    def _validate(self, path: str, temporary: str, command: str) -> None:
        if "%s" not in command:
            self.module.fail_json(msg=f"The validate command of {path} must hold %s where the file goes: {command}",
                                  path=path)
        argv = [temporary if word == "%s" else word.replace("%s", temporary) for word in shlex.split(command)]
        rc, out, err = self.module.run_command(argv)
        if rc != 0:
            self.module.fail_json(
                msg=f"The new content of {path} failed its check ({command}, exit {rc}); the file was left as it "
                    f"was: {(err or out).strip()}", path=path, rc=rc, stdout=out, stderr=err)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "directories": {"type": "list", "elements": "raw", "default": []},
            "files": {"type": "list", "elements": "dict", "default": [], "options": {
                "path": {"type": "path", "required": True},
                "content": {"type": "str"},
                "src": {"type": "path"},
                "owner": {"type": "str"},
                "group": {"type": "str"},
                "mode": {"type": "raw"},
                "validate": {"type": "str"},
                "secret": {"type": "bool", "default": False},
            }, "mutually_exclusive": [["content", "src"]], "required_one_of": [["content", "src"]]},
            "owner": {"type": "str"},
            "group": {"type": "str"},
            "file_mode": {"type": "raw", "default": "0644"},
            "directory_mode": {"type": "raw", "default": "0755"},
        },
        supports_check_mode=True,
    )
    files = Files(module)
    for raw in module.params["directories"]:
        files.directory(_entry(module, raw, "directories"))
    for spec in module.params["files"]:
        files.file(spec)
    result = {"changed": bool(files.changed), "changed_paths": files.changed, "created_paths": files.created}
    if module._diff:
        result["diff"] = files.diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
