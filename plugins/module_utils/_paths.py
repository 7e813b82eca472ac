# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private to the collection: paths a user gives on the controller (snapshots, kubeconfigs, bundles, files)."""

from __future__ import annotations

import os
from collections.abc import Iterable


def controller_path(path: object, fallbacks: Iterable[object] = (), cwd: str | None = None) -> str:
    """``path`` as the user meant it on the controller: ``~`` expanded and, when relative, read against the directory
    ansible-playbook was run from (``cwd``, by default this process's), as every command-line tool reads it.

    Ansible runs a module delegated to localhost from the playbook's directory, so a relative path handed to a module
    as it was typed is read against ``playbooks/`` instead: make it absolute here, where the templating runs (in the
    controller's process, whose directory is the user's). ``fallbacks`` are directories a setting was also read
    against before (the inventory's directory for a bundle): when the path is not found against ``cwd`` but is
    against one of them, that one is returned. Otherwise the path against ``cwd``, so a message can name exactly
    the file that was looked for. An empty path stays empty.
    """
    if path is None:
        return ""
    text = str(path)
    if not text:
        return ""
    expanded = os.path.expanduser(text)
    if os.path.isabs(expanded):
        return os.path.normpath(expanded)
    here = os.path.normpath(os.path.join(cwd or os.getcwd(), expanded))
    if os.path.exists(here):
        return here
    for base in fallbacks:
        if not base:
            continue
        candidate = os.path.normpath(os.path.join(os.path.expanduser(str(base)), expanded))
        if os.path.exists(candidate):
            return candidate
    return here


def controller_cache_dir() -> str:
    """The controller user's cache directory for the collection: ``$XDG_CACHE_HOME/slipway`` (``~/.cache/slipway``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "slipway")
