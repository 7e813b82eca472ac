# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of certificate expiry (pure functions of module_utils/_certificates.py)."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._certificates import cert_list, cert_report, pem_sections, renew_due


class FilterModule:
    """slipway.cluster's certificate filters."""

    def filters(self):
        return {
            "cert_list": cert_list,
            "cert_report": cert_report,
            "pem_sections": pem_sections,
            "renew_due": renew_due,
        }
