# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of recovering a cluster that lost the majority of its control planes
(pure functions of module_utils/_recovery.py)."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._recovery import recover_plan


class FilterModule:
    """slipway.cluster's recovery filters."""

    def filters(self):
        return {
            "recover_plan": recover_plan,
        }
