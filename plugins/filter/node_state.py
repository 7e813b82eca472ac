# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters that tell, from the node's state as the preflight read it (slipway.cluster.node_facts), whether a task
would change nothing: a rerun then skips the task instead of asking the node again (docs/performance.md)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()


def _attributes_match(state: Mapping[str, Any] | None, kind: str, owner: str, group: str, mode: Any) -> bool:
    if not isinstance(state, Mapping) or state.get("type") != kind:
        return False
    if str(state.get("owner")) != str(owner) or str(state.get("group")) != str(group):
        return False
    try:
        wanted = mode if isinstance(mode, int) else int(str(mode), 8)
        return int(str(state.get("mode")), 8) == wanted
    except ValueError:
        return False


def files_current(facts: Any, files: Any = (), directories: Any = (), owner: str = "root", group: str = "root",
                  file_mode: Any = "0644", directory_mode: Any = "0755") -> bool:
    """True when every directory and file, given as to slipway.cluster.files, is already on the node as that
    module would leave it, by the node's facts; False when anything differs or was not read."""
    states = facts.get("files") if isinstance(facts, Mapping) else None
    if not isinstance(states, Mapping):
        return False
    for raw in directories or ():
        entry = {"path": raw} if isinstance(raw, str) else dict(raw)
        if not _attributes_match(states.get(entry.get("path")), "directory", entry.get("owner") or owner,
                                 entry.get("group") or group, entry.get("mode") or directory_mode):
            return False
    for spec in files or ():
        state = states.get(spec.get("path"))
        if not _attributes_match(state, "file", spec.get("owner") or owner, spec.get("group") or group,
                                 spec.get("mode") or file_mode):
            return False
        if spec.get("src") is not None:
            wanted = (states.get(spec["src"]) or {}).get("sha256")
        elif spec.get("content") is not None:
            wanted = _sha256(str(spec["content"]))
        else:
            # Neither: the file's attributes only, as ansible.builtin.file sets them.
            continue
        if not wanted or state.get("sha256") != wanted:  # type: ignore[union-attr]
            return False
    return True


def block_current(facts: Any, path: str, marker: str, block: str) -> bool:
    """True when ansible.builtin.blockinfile with this path, marker and block would change nothing on the node."""
    blocks = facts.get("blocks") if isinstance(facts, Mapping) else None
    if not isinstance(blocks, Mapping):
        return False
    found = (blocks.get(path) or {}).get(marker)
    return bool(found) and found == _sha256("\n".join(str(block).splitlines()))


def kernel_modules_current(facts: Any, names: Any, persist_file: str) -> bool:
    """True when slipway.cluster.kernel_modules with these names and persist_file would change nothing: every module
    loaded or built in, and the boot file listing exactly the loaded ones (absent when none is)."""
    if not isinstance(facts, Mapping):
        return False
    states = facts.get("kernel_modules") or {}
    files = facts.get("files")
    if not isinstance(files, Mapping) or any(states.get(name) not in ("loaded", "builtin") for name in names):
        return False
    loaded = [name for name in dict.fromkeys(names) if states[name] == "loaded"]
    state = files.get(persist_file)
    if not loaded:
        return state is None
    return isinstance(state, Mapping) and state.get("sha256") == _sha256("".join(f"{name}\n" for name in loaded))


class FilterModule:
    """slipway.cluster's filters on the node's state as the preflight read it."""

    def filters(self):
        return {"files_current": files_current, "block_current": block_current,
                "kernel_modules_current": kernel_modules_current}
