# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.
"""One tar file of the bundle files a node lacks, made once on the controller and kept for the next node or run.

Copying a node's images one archive at a time cost a copy, an import and a removal round-trip per image (54 task
results of a 2-node cluster's creation, 60 s on a loaded machine), and its binaries a copy each (31, 44 s). With
one file per node the node gets one copy, and one task installs or imports everything in it
(slipway.cluster.install_files, slipway.cluster.image_import).
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: pack
version_added: 0.1.0
author: slipway.cluster developers (@slipway)
short_description: Make one tar file of several controller files, once, and return its path
description:
  - Puts the given files into one uncompressed tar file (each one named by its C(name) and O(member_suffix)) in a
    cache directory of the controller and returns the file's path, for M(ansible.builtin.copy) to send it in one
    transfer, and M(slipway.cluster.image_import) or M(slipway.cluster.install_files) to use it on the node.
  - The file is named by the members' names and sha256, so nodes that lack the same files, and later runs, use
    the same file; it is written under a lock to a temporary name and renamed, so a file of that name is complete.
  - The sha256 is the one the cluster model checked; the lookup does not read the files again for it.
  - Files of the cache directory that no run used for O(keep_hours) hours are removed, and then the least recently
    used ones until the directory holds at most O(keep_megabytes) (packs are remade from the bundle in seconds; a
    day of lab runs with changing bundles once left 14 GB there).
options:
  _terms:
    description:
      - The files, as items of the cluster model's images (C(dict2items)) with C(key) (the member's name),
        C(value.src) (the file on the controller) and C(value.sha256), or as mappings of C(name), C(src) and
        C(sha256) (such as the model's binaries, with C(name) their sha256).
    type: list
    elements: dict
    required: true
  names_from:
    description: Name each member by the file's C(name) (or C(key)), or by its C(sha256).
    type: str
    choices: [name, sha256]
    default: name
  member_suffix:
    description: Appended to each member's name (C(.tar) for image archives).
    type: str
    default: ""
  cache_dir:
    description: Where the files are kept. Defaults to C($XDG_CACHE_HOME/slipway/packs) (C(~/.cache/...)).
    type: path
  keep_hours:
    description: Remove files of O(cache_dir) unused for longer than this.
    type: int
    default: 24
  keep_megabytes:
    description:
      - Then remove the least recently used files of O(cache_dir) until the rest take at most this many megabytes
        (MiB). The pack this lookup returns is always kept.
    type: int
    default: 4096
"""

EXAMPLES = r"""
- name: Copy the images this node lacks, in one file
  ansible.builtin.copy:
    src: "{{ lookup('slipway.cluster.pack', missing_images, member_suffix='.tar') }}"
    dest: /var/lib/slipway/images/images.tar
    mode: "0600"
"""

RETURN = r"""
_raw:
  description: The path of the tar file on the controller.
  type: list
  elements: str
"""

import fcntl
import hashlib
import os
import tarfile
import tempfile
import time

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.slipway.cluster.plugins.module_utils._paths import controller_cache_dir

_SUFFIX = ".pack.tar"


def default_cache_dir() -> str:
    return os.path.join(controller_cache_dir(), "packs")


def archives(terms: list, names_from: str = "name") -> list:
    """[(member name, src, sha256)] sorted by name, from model items or plain mappings."""
    found = []
    for term in terms:
        if not isinstance(term, dict):
            raise AnsibleLookupError(f"pack takes mappings of the files to pack, not {term!r}")
        inner = term.get("value")
        value: dict = inner if isinstance(inner, dict) else term
        name = term.get("key", term.get("name"))
        src, sha256 = value.get("src"), value.get("sha256")
        if not (name and src and sha256):
            raise AnsibleLookupError(f"pack needs the name, src and sha256 of each file; got {term!r}")
        found.append((str(sha256 if names_from == "sha256" else name), str(src), str(sha256)))
    if not found:
        raise AnsibleLookupError("pack was given no file to pack")
    names = [name for name, _src, _sha in found]
    if len(set(names)) != len(names):
        raise AnsibleLookupError(f"pack was given a name twice: {sorted(names)}")
    return sorted(found)


def pack_name(items: list, suffix: str = "") -> str:
    digest = hashlib.sha256("".join(f"{name}{suffix}:{sha256}\n" for name, _src, sha256 in items).encode("utf-8"))
    return digest.hexdigest()[:32] + _SUFFIX


def prune(cache_dir: str, keep: str, keep_hours: int, now: float | None = None, keep_megabytes: int | None = None) -> list:
    """Remove the packs (and temporary files) unused for keep_hours, then the least recently used ones until the rest
    take at most keep_megabytes; the names removed. ``keep`` (the pack just made or used) stays."""
    now = time.time() if now is None else now
    removed = []
    left = []
    for name in sorted(os.listdir(cache_dir)):
        path = os.path.join(cache_dir, name)
        if name == keep or not (name.endswith(_SUFFIX) or name.startswith(".tmp-")):
            continue
        try:
            stat = os.stat(path)
            if now - stat.st_mtime > keep_hours * 3600:
                os.unlink(path)
                removed.append(name)
            else:
                left.append((stat.st_mtime, name, stat.st_size))
        except OSError:
            continue
    if keep_megabytes is not None:
        try:
            total = os.stat(os.path.join(cache_dir, keep)).st_size
        except OSError:
            total = 0
        total += sum(size for _mtime, _name, size in left)
        for _mtime, name, size in sorted(left):
            if total <= keep_megabytes * 1024 * 1024:
                break
            try:
                os.unlink(os.path.join(cache_dir, name))
            except OSError:
                continue
            removed.append(name)
            total -= size
    return removed


def make_pack(items: list, cache_dir: str, keep_hours: int = 24, suffix: str = "", keep_megabytes: int | None = 4096) -> str:
    """The pack's path, made when it is not there yet."""
    os.makedirs(cache_dir, exist_ok=True)
    name = pack_name(items, suffix)
    path = os.path.join(cache_dir, name)
    with open(os.path.join(cache_dir, ".lock"), "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(path):
            os.utime(path)  # used now: kept by prune
        else:
            fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle, tarfile.open(fileobj=handle, mode="w:", format=tarfile.GNU_FORMAT) as tar:
                    for member, src, _sha256 in items:
                        info = tar.gettarinfo(src, arcname=member + suffix)
                        info.uid = info.gid = 0
                        info.uname = info.gname = "root"
                        info.mode = 0o600
                        info.mtime = 0
                        with open(src, "rb") as archive:
                            tar.addfile(info, archive)
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        prune(cache_dir, name, keep_hours, keep_megabytes=keep_megabytes)
    return path


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        items = archives(terms[0] if len(terms) == 1 and isinstance(terms[0], list) else terms,
                         self.get_option("names_from"))
        cache_dir = self.get_option("cache_dir") or default_cache_dir()
        try:
            return [make_pack(items, cache_dir, self.get_option("keep_hours"), self.get_option("member_suffix"),
                              self.get_option("keep_megabytes"))]
        except OSError as err:
            raise AnsibleLookupError(f"pack could not write its file in {cache_dir}: {err}") from err
