# Unit tests of the kubelet serving certificate rules: which requests are approved, refused or left
# alone, with real certificate requests made here.
from __future__ import annotations

import base64
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.slipway.cluster.plugins.module_utils import _csr as csr

NODES = {"w1": ["10.88.10.21"], "cp1": ["10.88.10.11", "cp1.lab.example"]}


def request_pem(cn="system:node:w1", org="system:nodes", dns=("w1",), ips=("10.88.10.21",), emails=(), uris=()):
    names = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    names += [x509.RFC822Name(e) for e in emails] + [x509.UniformResourceIdentifier(u) for u in uris]
    subject = []
    if org:
        subject.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    if cn:
        subject.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(subject))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    request = builder.sign(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256())
    return base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()


def the_csr(request=None, user="system:node:w1", groups=("system:nodes", "system:authenticated"),
            usages=("digital signature", "server auth"), signer=csr.KUBELET_SERVING, conditions=()):
    return {"metadata": {"name": "csr-1"},
            "spec": {"signerName": signer, "username": user, "groups": list(groups), "usages": list(usages),
                     "request": request if request is not None else request_pem()},
            "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]} if conditions else {}}


def test_a_nodes_own_request_is_approved():
    assert csr.verdict(the_csr(), NODES) == (csr.APPROVE, "node w1 asks for w1, 10.88.10.21")
    # Other names the inventory gives the node, key encipherment (RSA keys), and an IP written another way.
    assert csr.verdict(the_csr(request_pem("system:node:cp1", dns=("cp1", "CP1.lab.example"), ips=("10.88.10.11",)),
                               user="system:node:cp1", usages=("key encipherment", "digital signature", "server auth")),
                       NODES)[0] == csr.APPROVE


@pytest.mark.parametrize("changes, reason", [
    ({"user": "system:serviceaccount:default:x"}, "requested by system:serviceaccount:default:x, not by a node"),
    ({"user": "system:node:w9", "request": request_pem("system:node:w9", dns=("w9",), ips=())},
     "node w9 is not in the inventory"),
    ({"groups": ("system:authenticated",)}, "the requester system:node:w1 is not in group system:nodes"),
    ({"usages": ("digital signature", "server auth", "client auth")}, "usages client auth, digital signature, server auth "
     "are not a kubelet's serving usages"),
    ({"usages": ("digital signature",)}, "usages digital signature are not"),
    ({"request": request_pem("system:node:cp1")}, "its subject is CN=system:node:cp1, O=system:nodes instead of "
     "CN=system:node:w1, O=system:nodes"),
    ({"request": request_pem(org="system:masters")}, "its subject is CN=system:node:w1, O=system:masters"),
    ({"request": request_pem(ips=("10.88.10.11",))}, "it names 10.88.10.11, which the inventory does not give node w1 "
     "(it has w1, 10.88.10.21)"),
    ({"request": request_pem(dns=("w1", "kubernetes.default"))}, "it names kubernetes.default, which"),
    ({"request": request_pem(emails=("a@example.org",))}, "it asks for e-mail addresses or URIs (a@example.org)"),
    ({"request": request_pem(uris=("spiffe://x/y",))}, "it asks for e-mail addresses or URIs (spiffe://x/y)"),
    ({"request": request_pem(dns=(), ips=())}, "it names no DNS name or IP address"),
    ({"request": base64.b64encode(b"not a request").decode()}, "it holds no PEM certificate request"),
    ({"request": "%%%"}, "it holds no PEM certificate request"),
])
def test_any_other_request_is_refused_with_the_reason(changes, reason):
    decision, why = csr.verdict(the_csr(**changes), NODES)
    assert decision == csr.REFUSE
    assert why.startswith(reason), why


def test_other_signers_and_decided_requests_are_left_alone():
    assert csr.verdict(the_csr(signer="kubernetes.io/kube-apiserver-client-kubelet"), NODES) == (
        csr.NOT_OURS, "signer kubernetes.io/kube-apiserver-client-kubelet")
    assert csr.verdict(the_csr(conditions=("Approved",)), NODES) == (csr.DONE, "approved")
    assert csr.verdict(the_csr(user="system:node:w9", conditions=("Denied",)), NODES) == (csr.DONE, "denied")


def test_the_approval_adds_the_condition_and_keeps_the_request():
    request = the_csr()
    body = csr.approval(request, "node w1 asks for w1")
    assert body["spec"] == request["spec"]
    assert body["status"]["conditions"] == [{"type": "Approved", "status": "True", "reason": "SlipwayInventoryNode",
                                             "message": "slipway.cluster approved it: node w1 asks for w1"}]
    assert request["status"] == {}
