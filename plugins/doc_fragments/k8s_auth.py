# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

# Connection options of the modules that talk to the Kubernetes API. The names, aliases and
# environment variables are kubernetes.core's, so module_defaults or K8S_AUTH_* variables set for
# kubernetes.core apply here too. The argument spec is AUTH_ARG_SPEC in module_utils/_k8s.py.

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a Kubernetes config file, for example C(/etc/kubernetes/admin.conf) on a control-plane node.
      - When neither O(kubeconfig), O(context) nor O(host) is set, the default config file C(~/.kube/config) is
        used, and inside a pod the pod's service account.
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: path
  context:
    description:
      - The name of a context in the config file.
      - Can also be set with the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for example V(https://192.0.2.10:6443). Overrides the server of the
        config file.
      - Can also be set with the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token used to authenticate with the API server.
      - Can also be set with the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - Can also be set with the E(K8S_AUTH_VERIFY_SSL) environment variable.
      - When not set, the config file decides (verification is on unless it says otherwise).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to the CA certificate that signed the API server's certificate (the full chain).
      - Can also be set with the E(K8S_AUTH_SSL_CA_CERT) environment variable.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate used to authenticate with the API server.
      - Can also be set with the E(K8S_AUTH_CERT_FILE) environment variable.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert).
      - Can also be set with the E(K8S_AUTH_KEY_FILE) environment variable.
    type: path
    aliases: [key_file]
requirements:
  - kubernetes (the Python client) >= 24.2.0
  - PyYAML
"""
