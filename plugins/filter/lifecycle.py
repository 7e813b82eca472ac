# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the day-2 playbooks: the running cluster, what scale.yml adds, what remove_node.yml may remove."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._day2 import api_problems
from ansible_collections.slipway.cluster.plugins.module_utils._lifecycle import (
    removal_plan,
    running_cluster,
    scale_plan,
)


class FilterModule:
    """slipway.cluster's day-2 filters (pure functions of module_utils/_lifecycle.py)."""

    def filters(self):
        return {
            "running_cluster": running_cluster,
            "scale_plan": scale_plan,
            "removal_plan": removal_plan,
            "day2_api_problems": api_problems,
        }
