# The metrics_server role's probe (roles/metrics_server/files/kubelet_tls_probe.py), which tells from a control plane
# which kubelets serve a certificate of the cluster CA for their address: run against real TLS servers on loopback,
# one with a certificate a test CA signed for 127.0.0.1, one signed by another CA.
from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import subprocess
import sys
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
PROBE_FILE = os.path.join(ROOT, "roles", "metrics_server", "files", "kubelet_tls_probe.py")


def load_probe():
    # The role's file, imported through the collection as ansible-test units has it (any file of it is importable).
    from ansible_collections.slipway.cluster.roles.metrics_server.files import kubelet_tls_probe  # pylint: disable=import-outside-toplevel

    return kubelet_tls_probe


def certificate(subject: str, key, issuer_name: str, issuer_key, ca: bool, address: str = ""):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               # As kubeadm's (Go's crypto/x509) certificates have them; Python 3.13's default verification
               # (VERIFY_X509_STRICT, trixie's python3) refuses a chain without them.
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                              critical=False)
               .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=ca,
                                            content_commitment=False, data_encipherment=False, key_agreement=False,
                                            crl_sign=False, encipher_only=False, decipher_only=False), critical=True))
    if address:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]),
                                        critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def write_pem(path, cert=None, key=None):
    data = b""
    if cert is not None:
        data += cert.public_bytes(serialization.Encoding.PEM)
    if key is not None:
        data += key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
    path.write_bytes(data)
    return str(path)


@pytest.fixture(name="pki")
def fixture_pki(tmp_path):
    ca_key, other_key, kubelet_key = (ec.generate_private_key(ec.SECP256R1()) for _key in range(3))
    ca = certificate("cluster-ca", ca_key, "cluster-ca", ca_key, ca=True)
    other = certificate("other-ca", other_key, "other-ca", other_key, ca=True)
    return {
        "ca": write_pem(tmp_path / "ca.crt", ca),
        "signed": write_pem(tmp_path / "signed.pem", certificate("kubelet", kubelet_key, "cluster-ca", ca_key, False,
                                                                 "127.0.0.1"), kubelet_key),
        "self": write_pem(tmp_path / "self.pem", certificate("kubelet", kubelet_key, "other-ca", other_key, False,
                                                             "127.0.0.1"), kubelet_key),
        "other": other,
    }


def serve(certfile: str) -> int:
    """A TLS server on loopback that completes handshakes with ``certfile``; its port."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile)
    listener = socket.create_server(("127.0.0.1", 0))

    def accept():
        while True:
            connection, _address = listener.accept()
            try:
                with context.wrap_socket(connection, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                pass

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def test_a_kubelet_with_a_certificate_of_the_cluster_ca_is_verified(pki):
    probe = load_probe()
    context = ssl.create_default_context(cafile=pki["ca"])
    assert probe.verdict("127.0.0.1", context, serve(pki["signed"])) == "verified"


def test_a_kubelet_with_another_certificate_is_not(pki):
    probe = load_probe()
    context = ssl.create_default_context(cafile=pki["ca"])
    answer = probe.verdict("127.0.0.1", context, serve(pki["self"]))
    assert answer.startswith("127.0.0.1: ") and "certificate verify failed" in answer


def test_a_kubelet_that_does_not_answer_is_named(pki):
    probe = load_probe()
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    answer = probe.verdict("127.0.0.1", ssl.create_default_context(cafile=pki["ca"]), port, timeout=2)
    assert answer.startswith("127.0.0.1: ") and answer != "verified"


def test_the_probe_prints_one_line_per_address_as_the_role_runs_it(pki, tmp_path):
    port = serve(pki["signed"])
    with open(PROBE_FILE, encoding="utf-8") as handle:
        program = handle.read()
    # As python3 -c with the addresses as arguments, CA and port pointed at the test's.
    program = program.replace('CA = "/etc/kubernetes/pki/ca.crt"', "CA = %r" % pki["ca"])
    program = program.replace("KUBELET_PORT = 10250", "KUBELET_PORT = %d" % port)
    result = subprocess.run([sys.executable, "-c", program, "127.0.0.1", "127.0.0.1"], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.splitlines() == ["verified", "verified"]
