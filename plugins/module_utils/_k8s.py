# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The connection to the Kubernetes API, and nothing of any resource.

The connection options carry kubernetes.core's names and environment variables, so a play that
sets them for kubernetes.core sets them for us too. ``build_api_client`` turns them into a
kubernetes ``ApiClient``; ``dynamic_client`` wraps it for plain REST calls (no discovery cache),
made with ``serializer=plain_data`` so answers stay plain dicts; ``K8sError`` carries what the API
server said (``body_text``). The resource APIs (_cluster_configuration_api.py, _drain_runner.py,
the kubelet_serving_csr module) are built on these.
"""

from __future__ import annotations

import traceback
from typing import Any

from ansible.module_utils.basic import env_fallback, missing_required_lib

K8S_IMPORT_ERROR = None
try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.dynamic import DynamicClient
    # The connection's errors, which the resource APIs built on it catch.
    from kubernetes.dynamic.exceptions import DynamicApiError  # pylint: disable=unused-import
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
    from urllib3.exceptions import HTTPError as Urllib3Error  # pylint: disable=unused-import
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

MERGE_PATCH = "application/merge-patch+json"


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


class NoDiscovery:
    """DynamicClient discoverer that discovers nothing: we call fixed REST paths, so neither
    the discovery requests nor the shared cache file in the temp directory are needed."""

    def __init__(self, client, cache_file):
        self.client = client


def plain_data(dummy_client, data):
    """A serializer that keeps an answer as the plain data it is."""
    return data


def dynamic_client(api_client: Any) -> Any:
    """The DynamicClient of an ApiClient, for fixed REST paths: it discovers nothing."""
    return DynamicClient(api_client, discoverer=NoDiscovery)


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


def body_text(exc: Any) -> Any:
    """The body of a failed call's answer, as text."""
    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    return body
