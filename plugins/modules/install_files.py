#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: install_files
short_description: Install files from a tar file or from copies on the node, checked by sha256, in one round-trip
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Installs each file of O(files) from a copy on the node named by its sha256 in O(staged_dir) where O(staged) has
    it, else from the member of the tar file O(pack) named by its sha256, and checks the sha256 on the way. Each file
    is written beside its destination and renamed over it, so a program that runs keeps its old file and a reader
    never sees half of one.
  - One task instead of a copy per file; the lookup P(slipway.cluster.pack#lookup) makes the tar file on the
    controller, and one M(ansible.builtin.copy) sends it.
  - Removes O(pack) once every file is installed. When one fails, nothing more is installed and the pack is kept.
options:
  pack:
    description: A tar file on the node whose members are named by their content's sha256.
    type: path
  staged_dir:
    description: A directory of copies named by their content's sha256 (the artifacts role's staging).
    type: path
  staged:
    description: The sha256 of the copies in O(staged_dir) known to be intact; these are used instead of O(pack).
    type: list
    elements: str
    default: []
  files:
    description:
      - The files to install, each a mapping with C(dest) (where it goes; its directory must exist), C(sha256) (the
        content's, which names its source in O(staged_dir) or O(pack); a file whose content differs is not installed,
        and the task fails) and optionally C(mode) (default C(0755)).
      - Other keys are ignored, so that the entries of the cluster model's binaries can be given as they are.
    type: list
    elements: dict
    required: true
  owner:
    description: Owner of every file.
    type: str
    default: root
  group:
    description: Group of every file.
    type: str
    default: root
  remove_pack:
    description: Remove O(pack) once every file is installed.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Reports the files that would be installed and changes nothing.
  diff_mode:
    support: none
    description: Binaries have no text to compare.
"""

EXAMPLES = r"""
- name: Install the binaries this node lacks from one file
  slipway.cluster.install_files:
    pack: /var/lib/slipway/binaries/binaries.tar
    staged_dir: /var/lib/slipway/binaries
    files:
      - dest: /usr/local/bin/kubeadm
        sha256: 4f1c...e2
"""

RETURN = r"""
installed:
  description: The destinations written (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [/usr/local/bin/kubeadm]
"""

import grp
import hashlib
import os
import pwd
import tarfile
import tempfile
from typing import IO, Any

from ansible.module_utils.basic import AnsibleModule


def _copy(source: IO[bytes], dest: str, sha256: str, mode: int, uid: int, gid: int) -> str | None:
    """Write source to a temporary file beside dest and rename it over dest; the sha256 it had when it differs."""
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest), prefix=f".{os.path.basename(dest)}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            for block in iter(lambda: source.read(1 << 20), b""):
                digest.update(block)
                handle.write(block)
        if digest.hexdigest() != sha256:
            os.unlink(tmp)
            return digest.hexdigest()
        os.chown(tmp, uid, gid)
        os.chmod(tmp, mode)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return None


def _ids(module: AnsibleModule) -> tuple[int, int]:
    try:
        uid = pwd.getpwnam(module.params["owner"]).pw_uid
        gid = grp.getgrnam(module.params["group"]).gr_gid
    except KeyError as err:
        module.fail_json(msg=f"no such user or group on the node: {err}")
    return uid, gid


def _source(module: AnsibleModule, entry: dict, opened: dict) -> IO[bytes]:
    """The content to install for entry: its staged copy when known intact, else its member of the pack."""
    params = module.params
    if params["staged_dir"] and entry["sha256"] in params["staged"]:
        staged = os.path.join(params["staged_dir"], entry["sha256"])
        try:
            return open(staged, "rb")  # pylint: disable=consider-using-with
        except OSError as err:
            module.fail_json(msg=f"the staged copy {staged} for {entry['dest']} cannot be read: {err}")
            raise
    if not params["pack"]:
        module.fail_json(msg=f"{entry['dest']}: {entry['sha256']} is neither staged nor in a pack")
    if "pack" not in opened:
        try:
            opened["pack"] = tarfile.open(params["pack"], mode="r:")  # pylint: disable=consider-using-with
        except (OSError, tarfile.TarError) as err:
            module.fail_json(msg=f"{params['pack']} cannot be read as a tar file ({err}); copy it again")
            raise
    try:
        source = opened["pack"].extractfile(entry["sha256"])
    except KeyError:
        source = None
    if source is None:
        module.fail_json(msg=f"{params['pack']} has no file {entry['sha256']} for {entry['dest']}")
        raise KeyError(entry["sha256"])
    return source


def run(module: AnsibleModule) -> dict[str, Any]:
    params = module.params
    files = params["files"]
    for entry in files:
        if not (isinstance(entry.get("dest"), str) and os.path.isabs(entry["dest"]) and isinstance(entry.get("sha256"), str)):
            module.fail_json(msg=f"each file needs an absolute dest and its sha256; got {entry!r}")
    result = {"changed": bool(files), "installed": [entry["dest"] for entry in files]}
    if module.check_mode or not files:
        return result
    uid, gid = _ids(module)
    opened: dict[str, tarfile.TarFile] = {}
    try:
        for entry in files:
            mode = int(str(entry.get("mode") or "0755"), 8)
            with _source(module, entry, opened) as source:
                wrong = _copy(source, entry["dest"], entry["sha256"], mode, uid, gid)
            if wrong:
                module.fail_json(msg=f"{entry['dest']} was not installed: its content has sha256 {wrong}, not "
                                     f"{entry['sha256']}; copy it again", installed=[])
    finally:
        for tar in opened.values():
            tar.close()
    if params["pack"] and params["remove_pack"] and os.path.exists(params["pack"]):
        os.unlink(params["pack"])
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "pack": {"type": "path"},
            "staged_dir": {"type": "path"},
            "staged": {"type": "list", "elements": "str", "default": []},
            "files": {"type": "list", "elements": "dict", "required": True},
            "owner": {"type": "str", "default": "root"},
            "group": {"type": "str", "default": "root"},
            "remove_pack": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    module.exit_json(**run(module))


if __name__ == "__main__":
    main()
