#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0). Ansible expects modules
# to be compatible with the GNU General Public License version 3, and the Apache License 2.0 is.

from __future__ import annotations

DOCUMENTATION = r"""
module: kubelet_serving_csr
short_description: Approve the kubelets' serving certificate requests that match the inventory's nodes
version_added: 0.1.0
author:
  - slipway.cluster developers (@slipway)
description:
  - With C(serverTLSBootstrap) in the kubelet configuration, each kubelet asks the cluster CA for its serving
    certificate with a CertificateSigningRequest of signer C(kubernetes.io/kubelet-serving), which Kubernetes signs
    only once it is approved. This module approves the pending ones that are exactly what their node may ask for.
  - A request is approved when its requester is C(system:node:NAME) in group C(system:nodes) with NAME a key of
    O(nodes); its subject is C(O=system:nodes, CN=system:node:NAME); every DNS name and IP address in it is NAME or
    one of O(nodes[NAME]), and there is at least one; it names no e-mail address or URI; and its usages are
    C(server auth) with C(digital signature) or C(key encipherment) only.
  - Any other pending request of that signer is left pending and returned in RV(refused) with the reason, and a
    warning names it. Requests of other signers, and requests approved, denied or failed before, are left alone.
  - With O(wait_for), the module also waits, up to O(timeout) seconds, until every node listed has a request
    approved (by this run or before), and fails naming the nodes without one and why.
options:
  nodes:
    description:
      - The nodes whose requests may be approved, each node's name mapped to the other DNS names and the IP
        addresses its serving certificate may hold (its inventory address; the name itself is always allowed).
    type: dict
    required: true
  wait_for:
    description:
      - Nodes whose request must be approved before the module returns, such as nodes that just joined or whose
        kubelet has no serving certificate of the cluster CA yet.
    type: list
    elements: str
    default: []
  timeout:
    description:
      - Seconds to wait for the requests of O(wait_for).
    type: int
    default: 120
extends_documentation_fragment:
  - slipway.cluster.k8s_auth
attributes:
  check_mode:
    support: full
    description: Returns in RV(approved) the requests it would approve, and changes nothing; it does not wait.
  diff_mode:
    support: none
    description: RV(approved) says what changed; there is no diff.
  idempotent:
    support: full
    description: An approved request is not approved again.
notes:
  - Needs the Python packages C(kubernetes) and C(cryptography) where it runs, typically the controller
    (C(delegate_to) V(localhost)) with the admin kubeconfig.
  - Kubernetes deletes approved requests an hour after they are signed; a kubelet asks again before its
    certificate expires (after about 70 to 90% of its lifetime), and a rerun of the playbook approves it.
seealso:
  - name: Kubelet serving certificates
    description: Kubernetes documentation on kubelet TLS bootstrapping and serving certificates.
    link: https://kubernetes.io/docs/reference/access-authn-authz/kubelet-tls-bootstrapping/#certificate-rotation
"""

EXAMPLES = r"""
- name: Approve the kubelets' serving certificates, waiting for the nodes that just joined
  slipway.cluster.kubelet_serving_csr:
    nodes:
      cp1: [10.88.10.11]
      w1: [10.88.10.21]
    wait_for: [w1]
    kubeconfig: "{{ inventory_dir }}/artifacts/admin.conf"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
approved:
  description: The requests approved (in check mode, to approve).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Name of the CertificateSigningRequest.
      type: str
      sample: csr-8x2kq
    node:
      description: The node that asked.
      type: str
      sample: w1
refused:
  description: Pending requests of signer C(kubernetes.io/kubelet-serving) left pending, with the reason.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Name of the CertificateSigningRequest.
      type: str
      sample: csr-p4m2d
    node:
      description: The node the request speaks for, empty when a node did not send it.
      type: str
      sample: w9
    reason:
      description: Why it is not approved.
      type: str
      sample: node w9 is not in the inventory
"""

import copy
import json
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.slipway.cluster.plugins.module_utils import _csr as csr
from ansible_collections.slipway.cluster.plugins.module_utils._k8s import (
    AUTH_ARG_SPEC,
    DynamicApiError,
    K8sError,
    Urllib3Error,
    api_client_or_fail,
    body_text,
    dynamic_client,
    plain_data,
)

CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
POLL_SECONDS = 2.0


class CsrApi:
    """Lists and approves CertificateSigningRequests through the REST API, as plain dicts."""

    def __init__(self, requester):
        self._requester = requester

    def _request(self, method, path, body=None):
        try:
            return self._requester.request(method, path, body=body, serializer=plain_data)
        except DynamicApiError as exc:
            text = body_text(exc)
            try:
                text = json.loads(text).get("message") or text
            except (TypeError, ValueError, AttributeError):
                pass
            raise K8sError("%s %s failed: %s: %s" % (method.upper(), path, getattr(exc, "status", None), text))
        except Urllib3Error as exc:
            raise K8sError("cannot reach the Kubernetes API server: %s" % exc)

    def requests(self):
        listing = self._request("get", CSR_PATH)
        return [item for item in (listing or {}).get("items") or [] if isinstance(item, dict)]

    def approve(self, request, why):
        self._request("put", "%s/%s/approval" % (CSR_PATH, csr.csr_name(request)), body=csr.approval(request, why))


def one_pass(api, module, nodes, result, satisfied):
    """Judge every request once, approving what may be; record the nodes that have an approved request."""
    refused = {}
    for request in api.requests():
        name = csr.csr_name(request)
        decision, why = csr.verdict(request, nodes)
        node = csr.requested_node(request)
        if decision == csr.APPROVE:
            if not module.check_mode:
                api.approve(request, why)
            if not any(item["name"] == name for item in result["approved"]):
                result["approved"].append({"name": name, "node": node})
            satisfied.add(node)
        elif decision == csr.DONE and why == "approved" and node in nodes:
            satisfied.add(node)
        elif decision == csr.REFUSE:
            refused[name] = {"name": name, "node": node, "reason": why}
    result["refused"] = sorted(refused.values(), key=lambda item: item["name"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            copy.deepcopy(AUTH_ARG_SPEC),
            nodes={"type": "dict", "required": True},
            wait_for={"type": "list", "elements": "str", "default": []},
            timeout={"type": "int", "default": 120},
        ),
        supports_check_mode=True,
    )
    nodes = {str(name): [str(item) for item in (values or [])] for name, values in module.params["nodes"].items()}
    unknown = [name for name in module.params["wait_for"] if name not in nodes]
    if unknown:
        module.fail_json(msg="wait_for names %s, which nodes does not list" % ", ".join(unknown))
    try:
        csr.parse_request("")
    except ImportError:
        module.fail_json(msg="the Python package cryptography is needed to read certificate requests")
    except ValueError:
        pass
    api = CsrApi(dynamic_client(api_client_or_fail(module)))
    result: dict[str, Any] = {"changed": False, "approved": [], "refused": []}
    satisfied: set[str] = set()
    deadline = time.monotonic() + max(module.params["timeout"], 0)
    try:
        while True:
            one_pass(api, module, nodes, result, satisfied)
            missing = [name for name in module.params["wait_for"] if name not in satisfied]
            if not missing or module.check_mode or time.monotonic() >= deadline:
                break
            time.sleep(POLL_SECONDS)
    except K8sError as exc:
        module.fail_json(msg=exc.msg, **result)
    result["changed"] = bool(result["approved"])
    for item in result["refused"]:
        module.warn("certificate request %s (node %s) left pending: %s" % (item["name"], item["node"] or "-", item["reason"]))
    if missing and not module.check_mode:
        reasons = {item["node"]: item["reason"] for item in result["refused"] if item["node"]}
        none_sent = "its kubelet sent none (is serverTLSBootstrap on, and the kubelet running?)"
        why = "; ".join("%s: %s" % (name, reasons.get(name, none_sent)) for name in missing)
        module.fail_json(msg="no serving certificate request of %s could be approved within %d s: %s" % (
            ", ".join(missing), module.params["timeout"], why), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
