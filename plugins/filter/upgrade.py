# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of playbooks/upgrade.yml and site.yml's version check (pure functions of module_utils/_upgrade.py)."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._upgrade import (
    plan_verdict,
    site_version_problems,
    static_pod_versions,
    upgrade_plan,
    upgrade_summary,
)


class FilterModule:
    """slipway.cluster's upgrade filters."""

    def filters(self):
        return {
            "upgrade_plan": upgrade_plan,
            "static_pod_versions": static_pod_versions,
            "upgrade_plan_verdict": plan_verdict,
            "site_version_problems": site_version_problems,
            "upgrade_summary": upgrade_summary,
        }
