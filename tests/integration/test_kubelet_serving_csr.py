"""slipway.cluster.kubelet_serving_csr against a real kube-apiserver (kube_apiserver.py), run by ansible-playbook.

The requests are created as the kubelets create them: by the user system:node:NAME in group system:nodes
(the test's admin impersonates them, so the API server itself records who asked), with real PEM
certificate requests. No controller manager runs, so approved requests are not signed; the test reads
the conditions the module wrote.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import yaml

from conftest import ROOT, run
from kube_apiserver import fixture_kube_api  # pylint: disable=unused-import  # its API server, for this module

CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def request_pem(node: str, dns: list[str], ips: list[str]) -> str:
    import base64
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    names = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    request = (x509.CertificateSigningRequestBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
                                        x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}")]))
               .add_extension(x509.SubjectAlternativeName(names), critical=False)
               .sign(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256()))
    return base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()


def let_nodes_request(kube_api) -> None:
    """What kubeadm binds in a cluster: nodes may create certificate requests (system:node-bootstrapper)."""
    if kube_api.request("get", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/test-nodes-request") is None:
        kube_api.request("post", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "test-nodes-request"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}]})


def create_as_node(kube_api, node: str, dns: list[str], ips: list[str], name: str) -> None:
    """POST the request as system:node:NODE, as its kubelet would."""
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(kube_api.kubeconfig))
    api_client.set_default_header("Impersonate-User", f"system:node:{node}")
    api_client.set_default_header("Impersonate-Group", "system:nodes")
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"signerName": "kubernetes.io/kubelet-serving", "usages": ["digital signature", "server auth"],
                     "request": request_pem(node, dns, ips)}}
    client.CertificatesV1Api(api_client).create_certificate_signing_request(body)


def conditions(kube_api, name: str) -> list[str]:
    found = kube_api.request("get", f"{CSR_PATH}/{name}")
    return [c["type"] for c in (found.get("status") or {}).get("conditions") or []]


def module_steps(kube_api, tmp_path: Path, *steps: dict) -> list[dict]:
    tasks = []
    for number, step in enumerate(steps):
        args = dict(step)
        check_mode = args.pop("check_mode", False)
        tasks.append({"name": f"step {number}", "slipway.cluster.kubelet_serving_csr": dict(args, kubeconfig=str(kube_api.kubeconfig)),
                      "check_mode": check_mode, "register": f"step{number}", "ignore_errors": True})
    tasks.append({"name": "Save the results", "ansible.builtin.copy": {
        "content": "{{ [" + ", ".join(f"step{n}" for n in range(len(steps))) + "] | to_json }}",
        "dest": str(tmp_path / "steps.json"), "mode": "0600"}})
    path = tmp_path / "csr.yml"
    path.write_text(yaml.safe_dump([{"name": "csr", "hosts": "localhost", "gather_facts": False, "tasks": tasks}],
                                   sort_keys=False))
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), str(path)],
                 env={"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"}, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return json.loads((tmp_path / "steps.json").read_text())


def test_only_requests_matching_an_inventory_node_are_approved(kube_api, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    good, stranger, wrong_ip = f"good-{suffix}", f"stranger-{suffix}", f"wrongip-{suffix}"
    w1, w2, w9 = f"w1-{suffix}", f"w2-{suffix}", f"w9-{suffix}"
    let_nodes_request(kube_api)
    create_as_node(kube_api, w1, [w1], ["10.88.10.21"], good)
    create_as_node(kube_api, w9, [w9], ["10.88.10.29"], stranger)
    create_as_node(kube_api, w2, [w2], ["10.88.10.21"], wrong_ip)  # w1's address: an impersonation
    nodes = {w1: ["10.88.10.21"], w2: ["10.88.10.22"]}

    check, first, again, waited = module_steps(
        kube_api, tmp_path,
        {"nodes": nodes, "check_mode": True},
        {"nodes": nodes, "wait_for": [w1]},
        {"nodes": nodes, "wait_for": [w1]},
        {"nodes": nodes, "wait_for": [w2], "timeout": 3},
    )
    ours = [item for item in check["approved"] if item["name"].endswith(suffix)]
    assert ours == [{"name": good, "node": w1}] and check["changed"]
    assert [item for item in first["approved"] if item["name"].endswith(suffix)] == [{"name": good, "node": w1}]
    assert first["changed"] and not first.get("failed")
    refused = {item["name"]: item for item in first["refused"] if item["name"].endswith(suffix)}
    assert refused[stranger]["reason"] == f"node {w9} is not in the inventory"
    assert refused[wrong_ip]["reason"].startswith(f"it names 10.88.10.21, which the inventory does not give node {w2}")
    assert conditions(kube_api, good) == ["Approved"]
    assert conditions(kube_api, stranger) == [] and conditions(kube_api, wrong_ip) == []
    # Approved before: nothing to do, and w1 counts as served.
    assert not again["changed"] and not again.get("failed")
    assert not [item for item in again["approved"] if item["name"].endswith(suffix)]
    # w2's only request names another node's address: waiting for it fails and says why.
    assert waited["failed"]
    assert f"no serving certificate request of {w2} could be approved within 3 s: {w2}: it names 10.88.10.21" in waited["msg"]
