#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: checksums
short_description: Read the SHA-256, owner and mode of files, hashing again only the files that changed
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - Returns the SHA-256 checksum, owner, group and mode of each given path in one module call, and tells
    which paths do not exist.
  - The checksums are kept in a cache file on the node, each with the file's device, inode, size,
    modification time and change time (C(ctime)). A file whose identity and times are all unchanged is not
    read again. Any write to a file, and any change of its owner or mode, moves its change time, which no
    tool can set back, so a changed file is always hashed anew.
  - Asking again about large files that did not change (the Kubernetes binaries, hundreds of megabytes per
    node) then costs a C(stat) each instead of reading them whole on every run.
options:
  paths:
    description: Absolute paths of the files to read.
    type: list
    elements: path
    required: true
  cache:
    description:
      - File on the node that keeps the checksums between runs, readable by its owner only.
      - Its directory is created (mode C(0700)) when missing. Entries of files that no longer exist are dropped.
    type: path
    default: /var/lib/slipway/checksums.json
attributes:
  check_mode:
    support: full
    description: Reads and hashes as usual, but does not update the cache file.
  diff_mode:
    support: none
    description: The module changes nothing on the node that matters, so there is nothing to show.
notes:
  - The task never reports a change; writing the cache file is the module's own bookkeeping.
  - A cache file that cannot be read or parsed is ignored, and every file is hashed.
seealso:
  - module: ansible.builtin.stat
  - module: ansible.builtin.find
"""

EXAMPLES = r"""
- name: Read the installed binaries
  slipway.cluster.checksums:
    paths: [/usr/local/bin/kubeadm, /usr/local/bin/kubelet]
  register: installed

- name: Tell whether kubeadm is the expected build
  ansible.builtin.debug:
    msg: "{{ installed.files['/usr/local/bin/kubeadm'].sha256 | default('') == expected_sha256 }}"
"""

RETURN = r"""
files:
  description:
    - For each existing path, its checksum and attributes. Paths that do not exist, or are not regular files,
      are left out.
  returned: always
  type: dict
  sample:
    /usr/local/bin/kubeadm:
      sha256: 5c1cfd6a7e0c8b1f9d2e3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d
      size: 72351928
      mode: "0755"
      owner: root
      group: root
missing:
  description: The paths that do not exist or are not regular files, in the order given.
  returned: always
  type: list
  elements: str
  sample: [/opt/cni/bin/bridge]
hashed:
  description: The paths whose content was read this time, because they were new to the cache or had changed.
  returned: always
  type: list
  elements: str
  sample: [/usr/local/bin/kubeadm]
"""

import grp
import json
import os
import pwd
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.slipway.cluster.plugins.module_utils._file_checksums import identity, sha256_of

_VERSION = 1


def _name(lookup, number: int) -> str:
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def load_cache(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _VERSION or not isinstance(data.get("files"), dict):
        return {}
    return data["files"]


def save_cache(path: str, entries: dict) -> None:
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".checksums-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"version": _VERSION, "files": entries}, out, sort_keys=True)
        os.rename(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def read(paths: list, cache: dict) -> tuple:
    """(files, missing, hashed, new cache) for ``paths``; ``cache`` as load_cache returns it."""
    files, missing, hashed = {}, [], []
    updated = {path: entry for path, entry in cache.items() if os.path.isfile(path)}
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            info = None
        if info is None or not stat.S_ISREG(info.st_mode):
            missing.append(path)
            updated.pop(path, None)
            continue
        key = identity(info)
        entry = updated.get(path)
        if not isinstance(entry, dict) or entry.get("identity") != key or not entry.get("sha256"):
            entry = {"identity": key, "sha256": sha256_of(path)}
            hashed.append(path)
            # Read again after hashing: a file written meanwhile must not keep this checksum.
            if identity(os.stat(path)) != key:
                entry = {"identity": [], "sha256": entry["sha256"]}
            updated[path] = entry
        files[path] = {
            "sha256": entry["sha256"],
            "size": info.st_size,
            "mode": "%04o" % stat.S_IMODE(info.st_mode),
            "owner": _name(pwd.getpwuid, info.st_uid),
            "group": _name(grp.getgrgid, info.st_gid),
        }
    return files, missing, hashed, updated


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "paths": {"type": "list", "elements": "path", "required": True},
            "cache": {"type": "path", "default": "/var/lib/slipway/checksums.json"},
        },
        supports_check_mode=True,
    )
    cache_path = module.params["cache"]
    cache = load_cache(cache_path)
    try:
        files, missing, hashed, updated = read(module.params["paths"], cache)
    except OSError as err:
        module.fail_json(msg=f"Could not read a file to checksum it: {to_native(err)}")
    if not module.check_mode and updated != cache:
        try:
            save_cache(cache_path, updated)
        except OSError as err:
            module.warn(f"Could not write the checksum cache {cache_path} ({to_native(err)}); "
                        "the next run hashes every file again.")
    module.exit_json(changed=False, files=files, missing=missing, hashed=hashed)


if __name__ == "__main__":
    main()
