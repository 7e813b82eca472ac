# Unit tests of slipway.cluster.pem_sections (plugins/filter/certificates.py) against what the summary role's and
# certs.yml's reads print: the shell loops run here, over real certificate files.
from __future__ import annotations

import datetime
import subprocess

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.slipway.cluster.plugins.filter.certificates import FilterModule
from ansible_collections.slipway.cluster.plugins.module_utils._certificates import cert_list, cert_report, pem_sections, renew_due

# The summary role's read of external etcd's certificates (roles/summary/tasks/read.yml).
SUMMARY_READ = ["sh", "-c", 'for file; do echo "== $file"; cat "$file"; done', "sh"]


def certificate(name: str, days: int) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=days)).sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def read(*paths) -> str:
    return subprocess.run(SUMMARY_READ + [str(path) for path in paths], capture_output=True, text=True,
                          check=False).stdout


@pytest.fixture
def pki(tmp_path):
    server = certificate("server", 365)[0]
    peer = certificate("peer", 30)[0]
    client, client_key = certificate("client", 10)
    (tmp_path / "server.crt").write_bytes(server)
    (tmp_path / "peer.crt").write_bytes(peer)
    # A kubelet's or a client's file: the certificate, then its key.
    (tmp_path / "client.pem").write_bytes(client + client_key)
    (tmp_path / "server.key").write_bytes(certificate("key only", 1)[1])
    return tmp_path


def test_each_file_its_certificate_in_the_order_read(pki):
    sections = pem_sections(read(pki / "peer.crt", pki / "server.crt", pki / "client.pem"))
    assert [section[0] for section in sections] == [str(pki / "peer.crt"), str(pki / "server.crt"), str(pki / "client.pem")]
    names = [x509.load_pem_x509_certificate(section[1].encode()).subject.rfc4514_string() for section in sections]
    assert names == ["CN=peer", "CN=server", "CN=client"]


def test_the_key_after_a_certificate_is_left_out(pki):
    [[name, pem]] = pem_sections(read(pki / "client.pem"))
    assert name == str(pki / "client.pem")
    assert pem.startswith("-----BEGIN CERTIFICATE-----\n") and pem.endswith("-----END CERTIFICATE-----")
    assert "PRIVATE KEY" not in pem


def test_a_missing_file_or_a_file_without_a_certificate_is_left_out(pki):
    text = read(pki / "gone.crt", pki / "server.key", pki / "server.crt")
    assert f"== {pki / 'gone.crt'}" in text
    assert [section[0] for section in pem_sections(text)] == [str(pki / "server.crt")]


def test_certs_playbook_lines_and_nothing():
    # certs.yml prints a name without a path and "!! NAME=PATHS" for a missing file; nothing read is no certificate.
    server = certificate("etcd-server", 365)[0]
    text = "== etcd-server\n" + server.decode() + "!! etcd-peer=/etc/etcd/pki/peer.crt\n"
    assert [section[0] for section in pem_sections(text)] == ["etcd-server"]
    assert pem_sections("") == [] and pem_sections(None) == []


def test_the_collection_exposes_it():
    assert FilterModule().filters()["pem_sections"] is pem_sections


# slipway.cluster.cert_list: the certs role's reads (kubeadm's JSON, the files' read, the admin kubeconfig) as one list.
KUBEADM_JSON = """{"kind": "CertExpirationInfo", "apiVersion": "output.kubeadm.k8s.io/v1alpha3",
 "certificates": [
  {"name": "admin.conf", "expirationDate": "2027-01-01T00:00:00Z", "residualTime": 1, "caName": "ca",
   "externallyManaged": false},
  {"name": "apiserver", "expirationDate": "2027-01-02T00:00:00Z", "residualTime": 1, "caName": "ca",
   "externallyManaged": false},
  {"name": "apiserver-etcd-client", "expirationDate": "", "residualTime": 0, "caName": "etcd-ca", "missing": true},
  {"name": "front-proxy-client", "expirationDate": "2027-01-03T00:00:00Z", "residualTime": 1,
   "caName": "front-proxy-ca", "externallyManaged": true}],
 "certificateAuthorities": [
  {"name": "ca", "expirationDate": "2036-01-01T00:00:00Z", "residualTime": 1, "externallyManaged": false}]}"""


def test_cert_list_every_read_in_order():
    admin = certificate("kubernetes-admin", 365)[0].decode()
    kubelet = certificate("system:node:cp1", 30)[0].decode()
    server = certificate("etcd-server", 10)[0].decode()
    pem_read = {"stdout": "== kubelet client\n" + kubelet + "!! kubelet serving=/a/kubelet-server-current.pem,/a/kubelet.crt\n"}
    etcd_read = "== etcd server\n" + server + "!! etcd peer=/etc/etcd/pki/peer.crt\n"
    found = cert_list(["cp1", "w1", "e1"], [{"stdout": KUBEADM_JSON}, {"skipped": True}, None],
                      [pem_read, {"stdout": ""}, etcd_read], admin)
    assert found == [
        {"host": "controller", "name": "admin kubeconfig", "not_after": "20270101000000Z"},
        {"host": "cp1", "name": "admin.conf", "not_after": "2027-01-01T00:00:00Z", "kubeadm": True, "renewable": True},
        {"host": "cp1", "name": "apiserver", "not_after": "2027-01-02T00:00:00Z", "kubeadm": True, "renewable": True},
        # Externally managed: kubeadm cannot renew it.
        {"host": "cp1", "name": "front-proxy-client", "not_after": "2027-01-03T00:00:00Z", "kubeadm": True,
         "renewable": False},
        # A CA: no caName, and not one kubeadm certs renew renews.
        {"host": "cp1", "name": "ca", "not_after": "2036-01-01T00:00:00Z", "kubeadm": False, "renewable": False},
        {"host": "cp1", "name": "kubelet client", "not_after": "20260131000000Z", "etcd": False},
        {"host": "cp1", "name": "kubelet serving", "missing": ["/a/kubelet-server-current.pem", "/a/kubelet.crt"],
         "etcd": False},
        {"host": "e1", "name": "etcd server", "not_after": "20260111000000Z", "etcd": True},
        {"host": "e1", "name": "etcd peer", "missing": ["/etc/etcd/pki/peer.crt"], "etcd": True},
    ]


def test_cert_list_is_what_cert_report_judges():
    admin = certificate("kubernetes-admin", 365)[0].decode()
    report = cert_report(cert_list(["cp1"], [KUBEADM_JSON], [""], admin), "2026-12-31T00:00:00Z", 30)
    assert [(cert["host"], cert["name"], cert["state"]) for cert in report["certificates"]] == [
        ("controller", "admin kubeconfig", "warning"), ("cp1", "admin.conf", "warning"),
        ("cp1", "apiserver", "warning"), ("cp1", "front-proxy-client", "warning"), ("cp1", "ca", "ok")]
    assert renew_due([cert for cert in report["certificates"] if cert.get("renewable") and cert.get("kubeadm")],
                     "2027-01-02T12:00:00Z") == ["cp1"]


def test_cert_list_names_reads_that_do_not_go_together():
    with pytest.raises(ValueError, match="2 hosts, 1 kubeadm reads and 2 file reads"):
        cert_list(["cp1", "cp2"], [KUBEADM_JSON], ["", ""], certificate("admin", 1)[0].decode())


def test_the_collection_exposes_cert_list():
    assert FilterModule().filters()["cert_list"] is cert_list
