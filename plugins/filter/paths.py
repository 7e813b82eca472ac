# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters for paths given on the controller."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._paths import controller_path


def _controller_path(path, fallbacks=None):
    if isinstance(fallbacks, str):
        fallbacks = [fallbacks]
    return controller_path(path, fallbacks or ())


class FilterModule:
    """slipway.cluster's path filters (module_utils/_paths.py)."""

    def filters(self):
        return {"controller_path": _controller_path}
