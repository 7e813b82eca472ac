"""A real kube-apiserver and etcd on loopback, started from the bundle's binaries, for tests of code
that talks to the Kubernetes API.

The module fixture ``kube_api`` takes the binaries out of the bundle (``bin/etcd`` when present,
else the etcd image; ``usr/local/bin/kube-apiserver`` from the kube-apiserver image: both images are
single-layer docker-archives), makes a throwaway CA, a serving certificate for 127.0.0.1, an admin
client certificate (group system:masters) and service-account keys, starts etcd and kube-apiserver on
free loopback ports with RBAC, waits for /readyz and writes a kubeconfig. Nothing listens beyond
127.0.0.1 and nothing is fetched: no cloud provider, no kubelet, no controller manager (so Deployments
get no pods and a deleted namespace stays Terminating). Each test module that imports the fixture gets
its own pair, and both processes stop when that module's tests are done: one pair runs at a time.

Without a bundle the fixture starts nothing and every test that uses it fails, saying to run
``make bundle``.
"""

from __future__ import annotations

import base64
import ctypes
import datetime
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
except ImportError:  # the fixture then fails with the reason
    x509 = None

ROOT = Path(__file__).resolve().parents[2]
BUNDLE_DIR = Path(os.environ.get("SLIPWAY_BUNDLE_DIR", ROOT / "bundle"))
BIN_CACHE = ROOT / ".cache" / "integration" / "bin"
READY_TIMEOUT = 90.0


def bundle_problem(bundle: Path = BUNDLE_DIR) -> str | None:
    """Why the bundle cannot give us an API server, or None when it can."""
    missing = [name for name in ("images/kube-apiserver.tar",) if not (bundle / name).is_file()]
    if not (bundle / "bin" / "etcd").is_file() and not (bundle / "images" / "etcd.tar").is_file():
        missing.append("bin/etcd or images/etcd.tar")
    if missing:
        return (f"the artifact bundle at {bundle} lacks {', '.join(missing)}: run `make bundle` first "
                "(these tests start a real kube-apiserver and etcd from it)")
    return None


def _image_binary(archive: Path, member: str, dest: Path) -> None:
    """Copy ``member`` out of the single layer of a docker-archive image."""
    with tarfile.open(archive) as outer:
        manifest_file = outer.extractfile("manifest.json")
        if manifest_file is None:
            raise RuntimeError(f"{archive} has no manifest.json")
        layers = json.load(manifest_file)[0]["Layers"]
        for layer in layers:
            layer_file = outer.extractfile(layer)
            if layer_file is None:
                continue
            with tarfile.open(fileobj=layer_file, mode="r|") as inner:
                for entry in inner:
                    if entry.name.lstrip("./") == member and entry.isfile():
                        source = inner.extractfile(entry)
                        if source is None:
                            break
                        partial = dest.with_suffix(".partial")
                        with partial.open("wb") as handle:
                            shutil.copyfileobj(source, handle)
                        partial.chmod(0o755)
                        partial.replace(dest)
                        return
    raise RuntimeError(f"{archive} holds no {member}")


def binary(name: str, bundle: Path = BUNDLE_DIR) -> Path:
    """The path of etcd or kube-apiserver, taken out of the bundle once and cached by archive size and time."""
    if name == "etcd" and (bundle / "bin" / "etcd").is_file():
        return bundle / "bin" / "etcd"
    archive = bundle / "images" / f"{name}.tar"
    stat = archive.stat()
    stamp = f"{stat.st_size}-{stat.st_mtime_ns}"
    dest = BIN_CACHE / stamp / name
    if not dest.is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        _image_binary(archive, f"usr/local/bin/{name}", dest)
    return dest


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the test process dies, even by SIGKILL (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _cert(subject: list, key, issuer_cert=None, issuer_key=None, ca: bool = False, sans=None, client: bool = False):
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name(subject)
    builder = (x509.CertificateBuilder()
               .subject_name(name)
               .issuer_name(issuer_cert.subject if issuer_cert is not None else name)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
    else:
        usage = x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH if client else x509.oid.ExtendedKeyUsageOID.SERVER_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key if issuer_key is not None else key, hashes.SHA256())


def _pem_cert(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class KubeApi:
    """A running API server: where it listens and how to reach it as cluster admin."""

    server: str
    kubeconfig: Path
    workdir: Path
    ca_cert: Path
    admin_cert: Path
    admin_key: Path
    start_seconds: float
    processes: list = field(default_factory=list)
    logs: dict = field(default_factory=dict)
    _client: object = None

    def request(self, method: str, path: str, body=None, content_type: str | None = None):
        """One REST call as cluster admin, the answer as plain data (checks made by the test itself).

        A GET of something that does not exist answers None; any other error raises.
        """
        from kubernetes import config as k8s_config
        from kubernetes.dynamic import DynamicClient
        from kubernetes.dynamic.exceptions import NotFoundError
        if self._client is None:
            self._client = DynamicClient(k8s_config.new_client_from_config(config_file=str(self.kubeconfig)),
                                         discoverer=_NoDiscovery)
        params = {"content_type": content_type} if content_type else {}
        try:
            return self._client.request(method, path, body=body, serializer=lambda _client, data: data, **params)
        except NotFoundError:
            if method.lower() != "get":
                raise
            return None

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.logs.get(name)
        if path is None or not Path(path).exists():
            return ""
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])


class _NoDiscovery:  # pylint: disable=too-few-public-methods
    """DynamicClient discoverer that discovers nothing: the tests call fixed REST paths."""

    def __init__(self, client, cache_file):
        self.client = client
        self.cache_file = cache_file


def _wait_ready(server: str, ca: Path, cert: Path, key: Path, processes: list, deadline: float) -> None:
    context = ssl.create_default_context(cafile=str(ca))
    context.load_cert_chain(str(cert), str(key))
    last = "no answer yet"
    while time.monotonic() < deadline:
        for proc in processes:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(server + "/readyz", context=context, timeout=2) as answer:
                if answer.status == 200:
                    return
                last = f"HTTP {answer.status}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
        except (OSError, ssl.SSLError) as exc:
            last = str(exc)
        time.sleep(0.1)
    raise RuntimeError(f"kube-apiserver was not ready in {READY_TIMEOUT:.0f} s: {last}")


def start(workdir: Path, bundle: Path = BUNDLE_DIR) -> KubeApi:
    """Start etcd and kube-apiserver in ``workdir``; the caller stops them with ``stop``."""
    if x509 is None:
        raise RuntimeError("the cryptography package is missing from the test environment (make venv installs it)")
    started = time.monotonic()
    etcd_bin = binary("etcd", bundle)
    apiserver_bin = binary("kube-apiserver", bundle)
    pki = workdir / "pki"
    pki.mkdir(parents=True)

    ca_key = _key()
    ca_cert = _cert([x509.NameAttribute(NameOID.COMMON_NAME, "slipway-test-ca")], ca_key, ca=True)
    serving_key = _key()
    serving_cert = _cert([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")], serving_key, ca_cert, ca_key,
                         sans=[x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    admin_key = _key()
    admin_cert = _cert([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                        x509.NameAttribute(NameOID.COMMON_NAME, "slipway-test-admin")],
                       admin_key, ca_cert, ca_key, client=True)
    sa_key = _key()
    files = {
        "ca.crt": _pem_cert(ca_cert),
        "apiserver.crt": _pem_cert(serving_cert),
        "apiserver.key": _pem_key(serving_key),
        "admin.crt": _pem_cert(admin_cert),
        "admin.key": _pem_key(admin_key),
        "sa.key": _pem_key(sa_key),
        "sa.pub": sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
    }
    for name, data in files.items():
        (pki / name).write_bytes(data)
        (pki / name).chmod(0o600)

    etcd_client, etcd_peer, secure_port = free_port(), free_port(), free_port()
    etcd_log = workdir / "etcd.log"
    apiserver_log = workdir / "kube-apiserver.log"
    processes = []
    api = None
    try:
        with etcd_log.open("wb") as log:
            processes.append(subprocess.Popen([  # pylint: disable=consider-using-with  # stopped by stop()
                str(etcd_bin),
                "--name=test",
                f"--data-dir={workdir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-cluster=test=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir, start_new_session=True,
                preexec_fn=_die_with_parent))
        with apiserver_log.open("wb") as log:
            processes.append(subprocess.Popen([  # pylint: disable=consider-using-with  # stopped by stop()
                str(apiserver_bin),
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={secure_port}",
                f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--authorization-mode=RBAC",
                # As kubeadm's API server: node agents and log stores run privileged containers.
                "--allow-privileged=true",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.96.0.0/16",
                # No Endpoints for the kubernetes Service: its only address would be loopback.
                "--endpoint-reconciler-type=none",
                f"--cert-dir={workdir / 'certs'}",
                "--profiling=false",
                "--v=0",
            ], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir, start_new_session=True,
                preexec_fn=_die_with_parent))
        server = f"https://127.0.0.1:{secure_port}"
        api = KubeApi(server=server, kubeconfig=workdir / "kubeconfig", workdir=workdir, start_seconds=0.0,
                      ca_cert=pki / "ca.crt", admin_cert=pki / "admin.crt", admin_key=pki / "admin.key",
                      processes=processes, logs={"etcd": etcd_log, "kube-apiserver": apiserver_log})
        _wait_ready(server, pki / "ca.crt", pki / "admin.crt", pki / "admin.key", processes,
                    time.monotonic() + READY_TIMEOUT)
    except Exception as exc:
        tails = "\n".join(f"--- {path.name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-25:])
                          for path in (etcd_log, apiserver_log) if path.exists())
        stop_processes(processes)
        raise RuntimeError(f"{exc}\n{tails}") from exc

    def b64(name: str) -> str:
        return base64.b64encode(files[name]).decode()

    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [{"name": "admin", "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}],
        "contexts": [{"name": "admin@test", "context": {"cluster": "test", "user": "admin"}}],
        "current-context": "admin@test",
    }
    api.kubeconfig.write_text(json.dumps(kubeconfig, indent=2))
    api.kubeconfig.chmod(0o600)
    api.start_seconds = time.monotonic() - started
    return api


def stop_processes(processes: list) -> None:
    """Stop the API server before etcd; each gets 10 s to exit on SIGTERM, then SIGKILL."""
    for proc in reversed(processes):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture(scope="module", name="kube_api")
def fixture_kube_api(tmp_path_factory) -> KubeApi:
    """A real kube-apiserver on loopback for one test module (see the module docstring)."""
    problem = bundle_problem()
    if problem:
        pytest.fail(problem, pytrace=False)
    workdir = tmp_path_factory.mktemp("kube-api")
    try:
        api = start(workdir)
    except RuntimeError as exc:
        pytest.fail(f"cannot start the loopback API server: {exc}", pytrace=False)
    print(f"\nkube-apiserver ready at {api.server} in {api.start_seconds:.1f} s")
    yield api
    stop_processes(api.processes)
    shutil.rmtree(workdir / "etcd", ignore_errors=True)
