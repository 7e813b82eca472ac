# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of site.yml's reconfiguration of a running cluster and of playbooks/rotate_encryption_key.yml
(pure functions of module_utils/_hardening.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.slipway.cluster.plugins.module_utils._hardening import (
    cluster_configuration_drift,
    encryption_config_keys,
    encryption_keys,
    rotation_plan,
    settings_drift,
    static_pod_drift,
)


def _config_keys(configs, names, new_name="", new_secret=""):
    try:
        return encryption_config_keys(configs, names, new_name, new_secret)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    """slipway.cluster's hardening filters."""

    def filters(self):
        return {
            "settings_drift": settings_drift,
            "static_pod_drift": static_pod_drift,
            "cluster_configuration_drift": cluster_configuration_drift,
            "encryption_keys": encryption_keys,
            "encryption_rotation_plan": rotation_plan,
            "encryption_config_keys": _config_keys,
        }
