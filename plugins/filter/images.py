# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of container images: those objects run, and those the nodes lack (pure functions of module_utils/_images.py)."""

from __future__ import annotations

from ansible_collections.slipway.cluster.plugins.module_utils._images import missing_images, object_images


class FilterModule:
    """slipway.cluster's image filters."""

    def filters(self):
        return {
            "missing_images": missing_images,
            "object_images": object_images,
        }
