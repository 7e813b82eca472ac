# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of site.yml's reconfiguration of a running cluster (pure functions of module_utils/_drift.py)."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._drift import (
    cluster_configuration_drift,
    settings_drift,
    static_pod_drift,
)


class FilterModule:
    """slipway.cluster's drift filters."""

    def filters(self):
        return {
            "settings_drift": settings_drift,
            "static_pod_drift": static_pod_drift,
            "cluster_configuration_drift": cluster_configuration_drift,
        }
