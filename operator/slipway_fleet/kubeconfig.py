"""A created cluster's kubeconfig, as a tenant may have written it, held to one strict form: pure Python.

``<cluster>-kubeconfig`` is a Secret in the tenant's namespace, so its content is the tenant's. The kubernetes
client's own loader would run an ``exec`` plugin or an ``auth-provider``, read any file a ``*-file`` or
``tokenFile`` key names, send requests through ``proxy-url``, skip TLS checks, and send a token to any ``server``.
None of that is used: the document is parsed here and only this form is accepted:

- one cluster with ``server`` (https) and ``certificate-authority-data``, nothing else;
- one user with ``client-certificate-data`` and ``client-key-data``, or with ``token``, nothing else;
- at most one context, naming them, and no other key but ``apiVersion``, ``kind``, ``preferences`` (empty) and
  ``current-context``;
- ``server`` is the cluster's own endpoint (its scheme, host and port), as the collection's model gives it.

Anything else is refused with the reason. The client is then built from these values by the code (a
``Configuration`` whose host, CA, client certificate or token are set one by one, no proxy), never through the
kubeconfig loader. The runner holds the kubeconfig it copies for the playbooks to the same form.
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import yaml

_TOP = {"apiVersion", "kind", "clusters", "users", "contexts", "current-context", "preferences"}
_CLUSTER = {"server", "certificate-authority-data"}
_CERT_USER = {"client-certificate-data", "client-key-data"}
_TOKEN_USER = {"token"}


class KubeconfigRefused(ValueError):
    """The kubeconfig is not of the accepted form; the message says why."""


@dataclass(frozen=True)
class Credentials:
    """What the client needs, and nothing else: PEM bytes and a token, all from the document's own data."""

    server: str
    ca: bytes
    client_cert: bytes = b""
    client_key: bytes = b""
    token: str = ""


def _one(document: dict, key: str, inner: str) -> tuple[str, dict]:
    items = document.get(key)
    if not isinstance(items, list) or len(items) != 1 or not isinstance(items[0], dict):
        raise KubeconfigRefused(f"{key}: holds {len(items) if isinstance(items, list) else 'no list of'} entries; "
                                f"the fleet reads a kubeconfig with exactly one of them")
    entry = items[0]
    extra = sorted(set(entry) - {"name", inner})
    if extra:
        raise KubeconfigRefused(f"{key}[0]: has {', '.join(extra)}; only name and {inner} are read")
    body = entry.get(inner)
    if not isinstance(body, dict):
        raise KubeconfigRefused(f"{key}[0].{inner}: is not a mapping")
    return str(entry.get("name") or ""), body


def _pem(value: Any, where: str, marker: str) -> bytes:
    try:
        data = base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise KubeconfigRefused(f"{where}: is not base64") from None
    if f"-----BEGIN {marker}".encode() not in data:
        raise KubeconfigRefused(f"{where}: holds no PEM {marker.lower()}")
    return data


def _endpoint(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = -1
    return parts.scheme, (parts.hostname or "").lower(), port


def parse(text: bytes | str, endpoint: str) -> Credentials:
    """The credentials of a kubeconfig of the strict form whose server is ``endpoint``; else KubeconfigRefused."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigRefused(f"is not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(document, dict):
        raise KubeconfigRefused("is not a kubeconfig (a mapping with clusters and users)")
    extra = sorted(set(document) - _TOP)
    if extra:
        raise KubeconfigRefused(f"has {', '.join(extra)}; the fleet reads only clusters, users and contexts")
    if document.get("preferences") not in (None, {}):
        raise KubeconfigRefused("preferences: is not empty; the fleet reads none")
    cluster_name, cluster = _one(document, "clusters", "cluster")
    user_name, user = _one(document, "users", "user")
    extra = sorted(set(cluster) - _CLUSTER)
    if extra:
        raise KubeconfigRefused(f"clusters[0].cluster: has {', '.join(extra)}; only server and "
                                "certificate-authority-data are accepted (no file path, proxy or skipped TLS check)")
    keys = set(user)
    if keys not in (_CERT_USER, _TOKEN_USER):
        raise KubeconfigRefused(f"users[0].user: has {', '.join(sorted(keys)) or 'nothing'}; the fleet accepts "
                                "client-certificate-data with client-key-data, or token, and nothing else (no exec "
                                "plugin, auth-provider, file path or impersonation)")
    contexts = document.get("contexts") or []
    if not isinstance(contexts, list) or len(contexts) > 1:
        raise KubeconfigRefused("contexts: the fleet reads a kubeconfig with at most one context")
    for entry in contexts:
        context = entry.get("context") if isinstance(entry, dict) and not set(entry) - {"name", "context"} else None
        if not isinstance(context, dict) or set(context) - {"cluster", "user"} \
                or context.get("cluster") != cluster_name or context.get("user") != user_name:
            raise KubeconfigRefused("contexts[0]: names another cluster or user, or sets a namespace or extensions; "
                                    "it may only name the one cluster and the one user")
    server = str(cluster.get("server") or "")
    if _endpoint(server)[0] != "https":
        raise KubeconfigRefused(f"clusters[0].cluster.server: {server[:100]!r} is not an https URL")
    if _endpoint(server) != _endpoint(endpoint):
        raise KubeconfigRefused(f"clusters[0].cluster.server: {server[:100]} is not the cluster's endpoint {endpoint}")
    ca = _pem(cluster.get("certificate-authority-data"), "clusters[0].cluster.certificate-authority-data", "CERTIFICATE")
    if "token" in user:
        token = str(user["token"])
        if not token or any(c.isspace() for c in token):
            raise KubeconfigRefused("users[0].user.token: is empty or holds white space")
        return Credentials(server=server, ca=ca, token=token)
    return Credentials(server=server, ca=ca,
                       client_cert=_pem(user["client-certificate-data"], "users[0].user.client-certificate-data", "CERTIFICATE"),
                       client_key=_pem(user["client-key-data"], "users[0].user.client-key-data", ""))


def api_client(credentials: Credentials, directory: str):
    """A kubernetes ApiClient for these credentials, its PEM files written into ``directory`` (the client reads
    certificates from files). The caller removes the directory; nothing of the environment (proxies) is used."""
    from kubernetes import client  # pylint: disable=import-outside-toplevel
    config = client.Configuration()
    config.host = credentials.server
    config.verify_ssl = True
    config.proxy = None
    config.ssl_ca_cert = _write(directory, "ca.crt", credentials.ca)
    if credentials.token:
        config.api_key = {"authorization": f"Bearer {credentials.token}"}
    else:
        config.cert_file = _write(directory, "client.crt", credentials.client_cert)
        config.key_file = _write(directory, "client.key", credentials.client_key)
    return client.ApiClient(config)


def _write(directory: str, name: str, data: bytes) -> str:
    path = os.path.join(directory, name)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    return path


def private_directory() -> tempfile.TemporaryDirectory:
    """A directory only this process's user reads, for the PEM files of one client."""
    return tempfile.TemporaryDirectory(prefix="slipway-fleet-target-")
