# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The ClusterConfiguration resource on the Kubernetes API.

``ClusterConfigurationApi`` reads and writes one ClusterConfiguration through a connection of _k8s.py
with plain REST paths (no discovery cache), which also works as is against a real API server in
integration tests::

    api = ClusterConfigurationApi(build_api_client({"kubeconfig": "/etc/kubernetes/admin.conf"}))
    api.get()
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.slipway.cluster.plugins.module_utils import _k8s as k8s
from ansible_collections.slipway.cluster.plugins.module_utils._cluster_configuration import (
    DEFAULT_NAME,
    DEFAULT_NAMESPACE,
    GROUP,
    PLURAL,
    VERSION,
)
from ansible_collections.slipway.cluster.plugins.module_utils._k8s import K8sError

# Which ClusterConfiguration: ks-installer's fixed name and namespace by default.
RESOURCE_ARG_SPEC: "dict[str, dict[str, Any]]" = {
    "name": {"type": "str", "default": DEFAULT_NAME},
    "namespace": {"type": "str", "default": DEFAULT_NAMESPACE},
}

GROUP_VERSION_PATH = "/apis/%s/%s" % (GROUP, VERSION)


class ClusterConfigurationApi:
    """Reads and writes one ClusterConfiguration through the REST API, as plain dicts.

    ``requester`` is anything with DynamicClient's ``request(method, path, body=None, **params)``;
    a kubernetes ApiClient is wrapped in a DynamicClient.
    """

    def __init__(self, api_client=None, name: str = DEFAULT_NAME, namespace: str = DEFAULT_NAMESPACE, requester=None):
        if requester is None:
            requester = k8s.dynamic_client(api_client)
        self._requester = requester
        self.name = name
        self.namespace = namespace
        self.collection_path = "%s/namespaces/%s/%s" % (GROUP_VERSION_PATH, namespace, PLURAL)
        self.path = "%s/%s" % (self.collection_path, name)

    def _request(self, method: str, path: str, body: Any = None, **params) -> Any:
        try:
            return self._requester.request(method, path, body=body, serializer=k8s.plain_data, **params)
        except k8s.DynamicApiError as exc:
            raise K8sError(self._message(method, path, exc), status=getattr(exc, "status", None),
                           reason=getattr(exc, "reason", None), body=k8s.body_text(exc))
        except k8s.Urllib3Error as exc:
            raise K8sError("cannot reach the Kubernetes API server: %s" % exc)

    @staticmethod
    def _message(method: str, path: str, exc: Any) -> str:
        summary = k8s.body_text(exc)
        try:
            summary = json.loads(summary).get("message") or summary
        except (TypeError, ValueError, AttributeError):
            pass
        status = getattr(exc, "status", "")
        reason = getattr(exc, "reason", "")
        return "%s %s failed: %s %s: %s" % (method.upper(), path, status, reason, summary)

    def resource_info(self) -> "dict[str, bool]":
        """Whether the API serves ClusterConfiguration, and whether it has a status subresource.

        ks-installer's CRD has none; slipway's has one.
        """
        try:
            listing = self._request("get", GROUP_VERSION_PATH)
        except K8sError as exc:
            if exc.status == 404:
                return {"served": False, "status_subresource": False}
            raise
        names = {item.get("name") for item in (listing or {}).get("resources", []) if isinstance(item, dict)}
        return {"served": PLURAL in names, "status_subresource": PLURAL + "/status" in names}

    def require_served(self) -> "dict[str, bool]":
        info = self.resource_info()
        if not info["served"]:
            raise K8sError("the API server does not serve %s/%s %s: install the ClusterConfiguration CRD first "
                           "(roles/kubesphere/files/clusterconfiguration-crd.yml)" % (GROUP, VERSION, PLURAL), status=404)
        return info

    def get(self) -> "dict | None":
        """The resource, or None when it does not exist."""
        try:
            return self._request("get", self.path)
        except K8sError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, body: dict) -> dict:
        try:
            return self._request("post", self.collection_path, body=body)
        except K8sError as exc:
            if exc.status == 404:
                raise K8sError("cannot create %s/%s: %s (does namespace %s exist?)"
                               % (self.namespace, self.name, exc.msg, self.namespace), exc.status, exc.reason, exc.body)
            raise

    def patch(self, patch: dict) -> dict:
        """Merge-patch the resource itself (spec, metadata, and status where there is no status subresource)."""
        return self._request("patch", self.path, body=patch, content_type=k8s.MERGE_PATCH)

    def patch_status(self, patch: dict, subresource: bool) -> dict:
        """Merge-patch status: through /status where the CRD has the subresource, else on the resource."""
        path = self.path + "/status" if subresource else self.path
        return self._request("patch", path, body=patch, content_type=k8s.MERGE_PATCH)
