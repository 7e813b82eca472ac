# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the repair playbooks: etcd snapshots, certificate expiry, recovering a lost control plane."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._repair import (
    cert_report,
    initial_cluster,
    recover_plan,
    renew_due,
    restore_problems,
    restored_already,
    snapshot_name,
    snapshots_to_prune,
)


class FilterModule:
    """slipway.cluster's repair filters (pure functions of module_utils/_repair.py)."""

    def filters(self):
        return {
            "snapshot_name": snapshot_name,
            "snapshots_to_prune": snapshots_to_prune,
            "restore_problems": restore_problems,
            "restored_already": restored_already,
            "cert_report": cert_report,
            "initial_cluster": initial_cluster,
            "renew_due": renew_due,
            "recover_plan": recover_plan,
        }
