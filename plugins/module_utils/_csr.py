# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Whether a kubelet's serving-certificate request may be approved, in pure Python.

With ``serverTLSBootstrap`` a kubelet asks the cluster CA for its serving certificate through a
CertificateSigningRequest of signer ``kubernetes.io/kubelet-serving``. Kubernetes signs such a
request only once someone approves it, and nothing in Kubernetes approves them: an approver that
approves every one lets any node (or anyone holding a node's credentials) obtain a certificate for
another node's name or address, and so impersonate it to the API server. This module approves a
request only when it is exactly what the node named in it may ask for:

- the requester is ``system:node:NAME`` in group ``system:nodes``, and NAME is a node of the
  inventory;
- the request's subject is ``O=system:nodes, CN=system:node:NAME``;
- every DNS name in it is one of that node's names, every IP address one of that node's addresses
  (from the inventory), and there is at least one; no e-mail address or URI;
- its usages are server auth with digital signature (and key encipherment), nothing else.

Everything else is refused with the reason; requests of other signers and requests already approved,
denied or failed are not this module's to judge.
"""

from __future__ import annotations

import base64
import ipaddress
from typing import Any, Iterable, Mapping

KUBELET_SERVING = "kubernetes.io/kubelet-serving"
NODE_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
ALLOWED_USAGES = frozenset(("digital signature", "key encipherment", "server auth"))

APPROVE = "approve"
REFUSE = "refuse"
DONE = "done"          # approved, denied or failed before: nothing to do
NOT_OURS = "not ours"  # another signer


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def csr_name(csr: Mapping[str, Any]) -> str:
    return _dict(csr.get("metadata")).get("name") or ""


def csr_conditions(csr: Mapping[str, Any]) -> list[str]:
    return [str(_dict(c).get("type")) for c in _dict(csr.get("status")).get("conditions") or []]


def requested_node(csr: Mapping[str, Any]) -> str:
    """The node a request speaks for, from its requester (empty when a node did not send it)."""
    username = str(_dict(csr.get("spec")).get("username") or "")
    return username[len(NODE_PREFIX):] if username.startswith(NODE_PREFIX) else ""


def parse_request(request_b64: str) -> dict[str, Any]:
    """The subject and alternative names of a PEM certificate request given base64-encoded, as the
    API holds it. Raises ValueError when it is not one."""
    from cryptography import x509  # the controller's Python has it: ansible-core requires it
    from cryptography.x509.oid import NameOID

    try:
        pem = base64.b64decode(request_b64 or "", validate=True)
        request = x509.load_pem_x509_csr(pem)
    except (ValueError, TypeError) as exc:
        raise ValueError("it holds no PEM certificate request (%s)" % exc) from exc
    try:
        sans = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        sans = x509.SubjectAlternativeName([])
    return {
        "common_names": [a.value for a in request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)],
        "organizations": [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)],
        "dns": list(sans.get_values_for_type(x509.DNSName)),
        "ips": [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)],
        "emails": list(sans.get_values_for_type(x509.RFC822Name)),
        "uris": list(sans.get_values_for_type(x509.UniformResourceIdentifier)),
    }


def _same_ip(left: str, right: str) -> bool:
    try:
        return ipaddress.ip_address(left) == ipaddress.ip_address(right)
    except ValueError:
        return False


def verdict(csr: Mapping[str, Any], nodes: Mapping[str, Iterable[str]], parsed: Mapping[str, Any] | None = None
            ) -> tuple[str, str]:
    """(APPROVE | REFUSE | DONE | NOT_OURS, why). ``nodes``: each inventory node's name -> its names and
    addresses that may be in its serving certificate (the node name itself is always allowed).
    ``parsed``: the request already parsed (tests), else it is parsed from the CSR."""
    spec = _dict(csr.get("spec"))
    if spec.get("signerName") != KUBELET_SERVING:
        return NOT_OURS, "signer %s" % spec.get("signerName")
    decided = [c for c in csr_conditions(csr) if c in ("Approved", "Denied", "Failed")]
    if decided:
        return DONE, decided[0].lower()
    node = requested_node(csr)
    if not node:
        return REFUSE, "requested by %s, not by a node (system:node:NAME)" % (spec.get("username") or "nobody")
    if node not in nodes:
        return REFUSE, "node %s is not in the inventory" % node
    if NODES_GROUP not in (spec.get("groups") or []):
        return REFUSE, "the requester system:node:%s is not in group %s" % (node, NODES_GROUP)
    usages = set(spec.get("usages") or [])
    if "server auth" not in usages or not usages <= ALLOWED_USAGES:
        return REFUSE, "usages %s are not a kubelet's serving usages (server auth, digital signature, key encipherment)" % (
            ", ".join(sorted(usages)) or "none")
    if parsed is None:
        try:
            parsed = parse_request(str(spec.get("request") or ""))
        except ValueError as exc:
            return REFUSE, str(exc)
    if parsed["common_names"] != [NODE_PREFIX + node] or parsed["organizations"] != [NODES_GROUP]:
        return REFUSE, "its subject is CN=%s, O=%s instead of CN=system:node:%s, O=system:nodes" % (
            ",".join(parsed["common_names"]), ",".join(parsed["organizations"]), node)
    if parsed["emails"] or parsed["uris"]:
        return REFUSE, "it asks for e-mail addresses or URIs (%s)" % ", ".join(parsed["emails"] + parsed["uris"])
    if not parsed["dns"] and not parsed["ips"]:
        return REFUSE, "it names no DNS name or IP address"
    allowed = [node] + [str(item) for item in nodes[node] or []]
    strangers = [name for name in parsed["dns"] if name.lower() not in {a.lower() for a in allowed}]
    strangers += [ip for ip in parsed["ips"] if not any(_same_ip(ip, a) for a in allowed)]
    if strangers:
        return REFUSE, "it names %s, which the inventory does not give node %s (it has %s)" % (
            ", ".join(strangers), node, ", ".join(allowed))
    return APPROVE, "node %s asks for %s" % (node, ", ".join(parsed["dns"] + parsed["ips"]))


def approval(csr: Mapping[str, Any], why: str) -> dict[str, Any]:
    """The CSR with the Approved condition added, as the /approval subresource takes it."""
    body = dict(csr)
    status = dict(_dict(csr.get("status")))
    status["conditions"] = list(status.get("conditions") or []) + [{
        "type": "Approved",
        "status": "True",
        "reason": "SlipwayInventoryNode",
        "message": "slipway.cluster approved it: " + why,
    }]
    body["status"] = status
    return body
