# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private to the collection: the sha256, owner and mode of files on a node, each sha256 kept in a cache file with
the file's identity and times (slipway.cluster.checksums, and slipway.cluster.node_facts's checksum_paths)."""

from __future__ import annotations

import grp
import json
import os
import pwd
import stat
import tempfile

from ansible_collections.slipway.cluster.plugins.module_utils._file_checksums import identity, sha256_of

DEFAULT_CACHE = "/var/lib/slipway/checksums.json"
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
