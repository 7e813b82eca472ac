# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private to the collection: the sha256 of the controller's files, each kept with the file's identity and times.

The model checks every file of a bundle against its manifest on every run: 1.6 GB of binaries and images, about
2 s of CPU before any host is contacted, on a rerun that changes nothing. A file whose device, inode, size,
modification time and change time are those it had when it was hashed has the same content: every write, rename
onto it, truncation or chmod moves its change time, which no user can set back (only a change of the system
clock could). The same rule as slipway.cluster.checksums on the nodes (docs/performance.md).

The cache is one JSON file of the controller user's (``$XDG_CACHE_HOME/slipway/file-sha256.json``); where it
cannot be read or written, every file is hashed as before. Two runs at once may each write it: the file is
replaced whole, and the entries of the one that loses are only hashed again next time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

from ansible_collections.slipway.cluster.plugins.module_utils._paths import controller_cache_dir

# Entries of files that are gone are dropped when the cache holds more than this many.
_MAX_ENTRIES = 20000


def default_cache_path() -> str:
    return os.path.join(controller_cache_dir(), "file-sha256.json")


def identity(stat: os.stat_result) -> list:
    """What must be unchanged for a cached checksum to hold: any write or chmod/chown moves ctime. The controller's
    cache here and the nodes' (the checksums module) both use it."""
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ChecksumCache:
    """sha256 of files by absolute path; a file is read whole only when its identity or times changed."""

    def __init__(self, path: str | None = None, hasher=sha256_of):
        self.path = path
        self._hasher = hasher
        self._entries: dict = {}
        self._dirty = False
        self.hashed: list = []  # the files read whole by this instance, for tests and benchmarks
        if path:
            try:
                with open(path, encoding="utf-8") as handle:
                    data = json.load(handle)
                if isinstance(data, dict) and isinstance(data.get("files"), dict):
                    self._entries = data["files"]
            except (OSError, ValueError):
                self._entries = {}

    def sha256(self, path: str) -> str | None:
        """The file's sha256, or None when it is not a regular file."""
        full = os.path.abspath(path)
        try:
            before = os.stat(full)
        except OSError:
            return None
        if not os.path.isfile(full):
            return None
        entry = self._entries.get(full)
        if isinstance(entry, dict) and entry.get("id") == identity(before) and isinstance(entry.get("sha256"), str):
            return entry["sha256"]
        digest = self._hasher(full)
        self.hashed.append(full)
        # Kept only when the file did not change while it was read.
        after = os.stat(full)
        if identity(after) == identity(before):
            self._entries[full] = {"id": identity(after), "sha256": digest}
            self._dirty = True
        return digest

    def save(self) -> None:
        """Write the cache when something was hashed; a cache that cannot be written is left alone."""
        if not (self.path and self._dirty):
            return
        entries = self._entries
        if len(entries) > _MAX_ENTRIES:
            entries = {name: entry for name, entry in entries.items() if os.path.isfile(name)}
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".file-sha256.")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"format": 1, "files": entries}, handle, separators=(",", ":"))
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
        self._dirty = False
