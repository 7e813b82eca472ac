# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of the encryption of Secrets at rest and of playbooks/rotate_encryption_key.yml
(pure functions of module_utils/_encryption.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.slipway.cluster.plugins.module_utils._encryption import encryption_config_keys, encryption_keys, rotation_plan


def _config_keys(configs, names, new_name="", new_secret=""):
    try:
        return encryption_config_keys(configs, names, new_name, new_secret)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    """slipway.cluster's encryption filters."""

    def filters(self):
        return {
            "encryption_keys": encryption_keys,
            "encryption_rotation_plan": rotation_plan,
            "encryption_config_keys": _config_keys,
        }
