# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of etcd snapshots: their names, which to keep, whether one may be restored
(pure functions of module_utils/_snapshots.py)."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._snapshots import (
    initial_cluster,
    restore_problems,
    restored_already,
    snapshot_name,
    snapshots_to_prune,
)


class FilterModule:
    """slipway.cluster's snapshot filters."""

    def filters(self):
        return {
            "snapshot_name": snapshot_name,
            "snapshots_to_prune": snapshots_to_prune,
            "restore_problems": restore_problems,
            "restored_already": restored_already,
            "initial_cluster": initial_cluster,
        }
