# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Connection to the Kubernetes API and the ClusterConfiguration resource on it.

The connection options carry kubernetes.core's names and environment variables, so a play that
sets them for kubernetes.core sets them for us too. ``build_api_client`` turns them into a
kubernetes ``ApiClient``; ``ClusterConfigurationApi`` reads and writes one ClusterConfiguration
through it with plain REST paths (no discovery cache), which also works as is against a real API
server in integration tests::

    api = ClusterConfigurationApi(build_api_client({"kubeconfig": "/etc/kubernetes/admin.conf"}))
    api.get()
"""

from __future__ import annotations

import json
import traceback
from typing import Any

from ansible.module_utils.basic import env_fallback, missing_required_lib

from ansible_collections.slipway.cluster.plugins.module_utils._cluster_configuration import (
    DEFAULT_NAME,
    DEFAULT_NAMESPACE,
    GROUP,
    PLURAL,
    VERSION,
)

K8S_IMPORT_ERROR = None
try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import DynamicApiError
except ImportError:
    K8S_IMPORT_ERROR = traceback.format_exc()
    HAS_K8S = False

    class DynamicApiError(Exception):  # type: ignore[no-redef]
        """Stands in when the kubernetes library is missing, so except clauses still work."""

    class ConfigException(Exception):  # type: ignore[no-redef]
        """Stands in when the kubernetes library is missing, so except clauses still work."""
else:
    HAS_K8S = True

try:
    from urllib3.exceptions import HTTPError as Urllib3Error
except ImportError:
    class Urllib3Error(Exception):  # type: ignore[no-redef]
        """Stands in when urllib3 is missing."""

# Connection options, with kubernetes.core's names, aliases and environment variables.
AUTH_ARG_SPEC: "dict[str, dict[str, Any]]" = {
    "kubeconfig": {"type": "path", "fallback": (env_fallback, ["K8S_AUTH_KUBECONFIG"])},
    "context": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_CONTEXT"])},
    "host": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_HOST"])},
    "api_key": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_API_KEY"])},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"], "fallback": (env_fallback, ["K8S_AUTH_VERIFY_SSL"])},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"], "fallback": (env_fallback, ["K8S_AUTH_SSL_CA_CERT"])},
    "client_cert": {"type": "path", "aliases": ["cert_file"], "fallback": (env_fallback, ["K8S_AUTH_CERT_FILE"])},
    "client_key": {"type": "path", "aliases": ["key_file"], "no_log": False, "fallback": (env_fallback, ["K8S_AUTH_KEY_FILE"])},
}

# Which ClusterConfiguration: ks-installer's fixed name and namespace by default.
RESOURCE_ARG_SPEC: "dict[str, dict[str, Any]]" = {
    "name": {"type": "str", "default": DEFAULT_NAME},
    "namespace": {"type": "str", "default": DEFAULT_NAMESPACE},
}

MERGE_PATCH = "application/merge-patch+json"
GROUP_VERSION_PATH = "/apis/%s/%s" % (GROUP, VERSION)


class K8sError(Exception):
    """A failed call to the Kubernetes API, with what the API server said."""

    def __init__(self, msg: str, status: "int | None" = None, reason: "str | None" = None, body: Any = None):
        super().__init__(msg)
        self.msg = msg
        self.status = status
        self.reason = reason
        self.body = body

    def details(self) -> "dict[str, Any]":
        return {"status": self.status, "reason": self.reason, "body": self.body}


class _NoDiscovery:
    """DynamicClient discoverer that discovers nothing: we call fixed REST paths, so neither
    the discovery requests nor the shared cache file in the temp directory are needed."""

    def __init__(self, client, cache_file):
        self.client = client


def _plain(dummy_client, data):
    return data


def api_client_or_fail(module) -> Any:
    """The ApiClient for a module's connection options; fails the module when there cannot be one."""
    if not HAS_K8S:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=K8S_IMPORT_ERROR)
    try:
        return build_api_client(module.params)
    except K8sError as exc:
        module.fail_json(msg=exc.msg)
    return None  # not reached: fail_json exits


def build_api_client(params: "dict[str, Any]"):
    """A kubernetes ApiClient from the connection options.

    Like kubernetes.core: a kubeconfig (the given file and context, else the default one) or, when
    there is none and no host is given, the in-cluster service account; host, api_key, certificates
    and validate_certs then override what that loaded.
    """
    configuration = k8s_client.Configuration()
    kubeconfig = params.get("kubeconfig")
    context = params.get("context")
    host = params.get("host")
    try:
        if kubeconfig or context:
            k8s_config.load_kube_config(config_file=kubeconfig, context=context,
                                        client_configuration=configuration, persist_config=False)
        elif not host:
            try:
                k8s_config.load_kube_config(client_configuration=configuration, persist_config=False)
            except (ConfigException, OSError):
                k8s_config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError) as exc:
        raise K8sError("cannot load the Kubernetes client configuration: %s; set kubeconfig (or K8S_AUTH_KUBECONFIG), "
                       "or host with api_key or client_cert and client_key" % exc)
    if host:
        configuration.host = host
    if params.get("api_key"):
        # The token replaces whatever the kubeconfig gave, including a hook that would refresh
        # that one. Newer clients look the token up as BearerToken, older ones as authorization.
        token = "Bearer " + params["api_key"]
        configuration.refresh_api_key_hook = None
        configuration.api_key = {"BearerToken": token, "authorization": token}
        configuration.api_key_prefix = {}
    if params.get("validate_certs") is not None:
        configuration.verify_ssl = params["validate_certs"]
    if params.get("ca_cert"):
        configuration.ssl_ca_cert = params["ca_cert"]
    if params.get("client_cert"):
        configuration.cert_file = params["client_cert"]
    if params.get("client_key"):
        configuration.key_file = params["client_key"]
    return k8s_client.ApiClient(configuration=configuration)


class ClusterConfigurationApi:
    """Reads and writes one ClusterConfiguration through the REST API, as plain dicts.

    ``requester`` is anything with DynamicClient's ``request(method, path, body=None, **params)``;
    a kubernetes ApiClient is wrapped in a DynamicClient.
    """

    def __init__(self, api_client=None, name: str = DEFAULT_NAME, namespace: str = DEFAULT_NAMESPACE, requester=None):
        if requester is None:
            requester = DynamicClient(api_client, discoverer=_NoDiscovery)
        self._requester = requester
        self.name = name
        self.namespace = namespace
        self.collection_path = "%s/namespaces/%s/%s" % (GROUP_VERSION_PATH, namespace, PLURAL)
        self.path = "%s/%s" % (self.collection_path, name)

    def _request(self, method: str, path: str, body: Any = None, **params) -> Any:
        try:
            return self._requester.request(method, path, body=body, serializer=_plain, **params)
        except DynamicApiError as exc:
            raise K8sError(self._message(method, path, exc), status=getattr(exc, "status", None),
                           reason=getattr(exc, "reason", None), body=_body_text(exc))
        except Urllib3Error as exc:
            raise K8sError("cannot reach the Kubernetes API server: %s" % exc)

    @staticmethod
    def _message(method: str, path: str, exc: Any) -> str:
        summary = _body_text(exc)
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
        return self._request("patch", self.path, body=patch, content_type=MERGE_PATCH)

    def patch_status(self, patch: dict, subresource: bool) -> dict:
        """Merge-patch status: through /status where the CRD has the subresource, else on the resource."""
        path = self.path + "/status" if subresource else self.path
        return self._request("patch", path, body=patch, content_type=MERGE_PATCH)


def _body_text(exc: Any) -> Any:
    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    return body
