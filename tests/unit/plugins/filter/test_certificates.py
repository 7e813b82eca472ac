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
from ansible_collections.slipway.cluster.plugins.module_utils._certificates import pem_sections

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
