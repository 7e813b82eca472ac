"""KubeSphere's core from the bundle's images against a real kube-apiserver, inside a network namespace of its own.

Run by test_kubesphere_core.py under `unshare -n` (with loopback up): ks-controller-manager listens on every address
at fixed ports (8443 for its webhooks, 8080 for its metrics), which only a private network namespace keeps from
colliding with anything else on the machine. Starts etcd and kube-apiserver (kube_apiserver.py), applies KubeSphere's
CRDs as the kubesphere role ships them, its namespaces, the first user admin (plain password, as the role makes it)
and the GlobalRoleBinding admin; runs ks-apiserver and ks-controller-manager taken out of the bundle's images, and the
console taken out of its image with this machine's Node.js behind the role's TLS front (files/ks-console-tls-front.js);
ks-apiserver's configuration file names the JWT secret empty, as the role's kubesphere-config does, and the secret comes
from KUBESPHERE_AUTHENTICATION_JWTSECRET, as the role's Deployment sets it from its Secret. Then asks each what the
role's checks ask, and opens the console over TLS in headless Chromium (molecule/kubesphere/console_browser.py). Prints one JSON object of what it saw; every
judgement is the test's.

    kubesphere_core_netns.py BUNDLE WORKDIR SCREENSHOTS
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import ipaddress
import json
import os
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import kube_apiserver as ka  # beside this script: its folder is the first on sys.path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

CRDS = ROOT / "roles" / "kubesphere" / "files" / "crds" / "kubesphere.io.yml"
BROWSER = ROOT / "molecule" / "kubesphere" / "console_browser.py"
PASSWORD = "Slipway-Verify-8f3a"  # a throwaway cluster inside this namespace
CONSOLE_PORT = 8000
TLS_PORT = 30880  # the node port the Service gives it; 8443 is ks-controller-manager's here
TLS_FRONT = ROOT / "roles" / "kubesphere" / "files" / "ks-console-tls-front.js"
# ks-apiserver's configuration loader reads KUBESPHERE_<SECTION>_<KEY> over its file (pkg/apiserver/config/config.go).
JWT_ENV = "KUBESPHERE_AUTHENTICATION_JWTSECRET"
JWT_SECRET = "jwt-secret-from-the-environment-0123"


def wait(predicate, seconds=120.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    return None


def get(url, ca_pem=None):
    """Status and body of a GET; over https, trusting only ca_pem (none: the system's CAs)."""
    context = ssl.create_default_context(cadata=ca_pem) if ca_pem else None
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError:
        return None, ""


def ok(url, ca_pem=None):
    """The answer of a GET of ``url`` when it is 200, else None (to wait for)."""
    answer = get(url, ca_pem)
    return answer if answer[0] == 200 else None


def token(port, username, password):
    body = urllib.parse.urlencode({"grant_type": "password", "username": username, "password": password,
                                   "client_id": "kubesphere", "client_secret": "kubesphere"}).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/oauth/token", data=body),
                                    timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {}


def signed_with(jwt: str, secret: str) -> bool:
    """Whether an HS256 JWT's signature is that of ``secret``."""
    parts = jwt.split(".")
    if len(parts) != 3:
        return False
    digest = hmac.new(secret.encode(), f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
    return hmac.compare_digest(base64.urlsafe_b64encode(digest).rstrip(b"=").decode(), parts[2])


def console_certificate(directory: Path) -> tuple[str, str]:
    """A CA and the console's certificate for localhost and 127.0.0.1 (P-256, serverAuth, as the role makes it) in
    ``directory`` (tls.crt, tls.key); the CA's PEM and the base64 sha256 of the certificate's public key."""
    directory.mkdir()
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ks-console-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ks-console")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    spki = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return ca.public_bytes(serialization.Encoding.PEM).decode(), base64.b64encode(hashlib.sha256(spki).digest()).decode()


def extract_tree(archive: Path, prefix: str, dest: Path) -> None:
    """Every file under ``prefix`` of the image's single layer, into ``dest``."""
    with tarfile.open(archive) as outer:
        layer = json.load(outer.extractfile("manifest.json"))[0]["Layers"][0]
        with tarfile.open(fileobj=outer.extractfile(layer), mode="r|") as inner:
            for entry in inner:
                name = entry.name.lstrip("./")
                if entry.isfile() and name.startswith(prefix + "/"):
                    target = dest / name[len(prefix) + 1:]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with target.open("wb") as handle:
                        handle.write(inner.extractfile(entry).read())


def start(args, cwd, log, env=None):
    handle = log.open("w")
    return subprocess.Popen(args, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                            preexec_fn=ka._die_with_parent)  # pylint: disable=protected-access


def main(bundle: Path, work: Path, shots: Path) -> dict:
    seen: dict = {}
    api = ka.start(work / "kube", bundle)
    processes = list(api.processes)
    try:
        for crd in yaml.safe_load(CRDS.read_text()):
            api.request("post", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd)
        for name in ("kubesphere-system", "kubesphere-controls-system"):
            api.request("post", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                            "metadata": {"name": name}})
        api.request("post", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node",
                                                   "metadata": {"name": "ks33-node"}})
        wait(lambda: all(
            any(cond["type"] == "Established" and cond["status"] == "True"
                for cond in (api.request("get", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                         + crd["metadata"]["name"]) or {}).get("status", {}).get("conditions", []))
            for crd in yaml.safe_load(CRDS.read_text())), 60)
        config = work / "config"
        config.mkdir()
        # As the role writes kubesphere-config: the JWT secret named, empty; ks-apiserver gets it from its environment.
        (config / "kubesphere.yaml").write_text(yaml.safe_dump({
            "kubernetes": {"kubeconfig": str(api.kubeconfig)},
            "monitoring": {"endpoint": "http://127.0.0.1:1"},
            "authentication": {"jwtSecret": "", "oauthOptions": {"clients": [
                {"name": "kubesphere", "secret": "kubesphere", "redirectURIs": ["*"]}]}}}))
        binaries = work / "bin"
        binaries.mkdir()
        ka._image_binary(bundle / "images" / "ks-apiserver.tar", "usr/local/bin/ks-apiserver",  # pylint: disable=protected-access
                         binaries / "ks-apiserver")
        ka._image_binary(bundle / "images" / "ks-controller-manager.tar",  # pylint: disable=protected-access
                         "usr/local/bin/controller-manager", binaries / "controller-manager")
        # Without the variable, the file alone gives ks-apiserver no JWT secret: it refuses to start.
        alone = subprocess.run([str(binaries / "ks-apiserver"), "--bind-address", "127.0.0.1", "--insecure-port",
                                str(ka.free_port())], cwd=config, capture_output=True, text=True, timeout=120,
                               env={key: value for key, value in os.environ.items() if key != JWT_ENV}, check=False)
        seen["without_jwt_env"] = {"rc": alone.returncode,
                                   "refused": "JWT secret MUST not be empty" in alone.stdout + alone.stderr}
        port = ka.free_port()
        processes.append(start([str(binaries / "ks-apiserver"), "--bind-address", "127.0.0.1", "--insecure-port",
                                str(port)], config, work / "ks-apiserver.log", env=dict(os.environ, **{JWT_ENV: JWT_SECRET})))
        status, body = wait(lambda: ok(f"http://127.0.0.1:{port}/kapis/version")) or (None, "{}")
        seen["version"] = json.loads(body) if status == 200 else {"status": status}

        # ks-controller-manager's webhook server needs a serving certificate to start: the API server's will do.
        certs = work / "certs"
        certs.mkdir()
        (certs / "tls.crt").write_bytes(api.admin_cert.read_bytes())
        (certs / "tls.key").write_bytes(api.admin_key.read_bytes())
        processes.append(start([str(binaries / "controller-manager"), "--leader-elect=false", "--webhook-cert-dir",
                                str(certs)], config, work / "ks-controller-manager.log"))
        iam = "/apis/iam.kubesphere.io/v1alpha2"
        api.request("post", iam + "/globalroles", body={
            "apiVersion": "iam.kubesphere.io/v1alpha2", "kind": "GlobalRole", "metadata": {"name": "platform-admin"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                      {"nonResourceURLs": ["*"], "verbs": ["*"]}]})
        api.request("post", iam + "/users", body={
            "apiVersion": "iam.kubesphere.io/v1alpha2", "kind": "User", "metadata": {"name": "admin"},
            "spec": {"email": "admin@kubesphere.io", "password": PASSWORD}})
        api.request("post", iam + "/globalrolebindings", body={
            "apiVersion": "iam.kubesphere.io/v1alpha2", "kind": "GlobalRoleBinding", "metadata": {"name": "admin"},
            "roleRef": {"apiGroup": "iam.kubesphere.io", "kind": "GlobalRole", "name": "platform-admin"},
            "subjects": [{"apiGroup": "iam.kubesphere.io", "kind": "User", "name": "admin"}]})

        def reconciled():
            user = api.request("get", iam + "/users/admin")
            binding = api.request("get", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/admin-cluster-admin")
            if user and (user.get("status") or {}).get("state") == "Active" and binding:
                return user, binding
            return None

        user, binding = wait(reconciled) or (api.request("get", iam + "/users/admin"), None)
        seen["user"] = {"state": (user.get("status") or {}).get("state"),
                        "password_prefix": user["spec"].get("password", "")[:4]}
        seen["binding"] = binding and {"role": binding["roleRef"]["name"],
                                       "subjects": [subject["name"] for subject in binding["subjects"]]}
        status, issued = token(port, "admin", PASSWORD)
        seen["token"] = status
        seen["token_signed_with_the_env_secret"] = signed_with(issued.get("access_token", ""), JWT_SECRET)
        seen["token_signed_with_another_secret"] = signed_with(issued.get("access_token", ""), JWT_SECRET + "x")
        seen["wrong_password"] = token(port, "admin", PASSWORD + "x")[0]

        console = work / "console"
        extract_tree(bundle / "images" / "ks-console.tar", "opt/kubesphere/console", console)
        (console / "server" / "local_config.yaml").write_text(yaml.safe_dump({
            "server": {"http": {"hostname": "127.0.0.1", "port": CONSOLE_PORT},
                       "apiServer": {"url": f"http://127.0.0.1:{port}", "wsUrl": f"ws://127.0.0.1:{port}"}},
            "client": {"version": {"kubesphere": "v3.4.1"}}}))
        processes.append(start(["node", "server/server.js"], console, work / "ks-console.log",
                               env=dict(os.environ, NODE_ENV="production")))
        status, body = wait(lambda: ok(f"http://127.0.0.1:{CONSOLE_PORT}/login")) or (None, "")
        seen["login_page"] = {"status": status, "title": "<title>KubeSphere</title>" in body}

        # The role's TLS front (files/ks-console-tls-front.js) in front of it, as in ks-console's pod, with a
        # certificate from a CA of this test's, as the role makes it for the console.
        tls_dir = work / "console-tls"
        ca_pem, spki = console_certificate(tls_dir)
        processes.append(start(["node", str(TLS_FRONT)], console, work / "tls-front.log",
                               env=dict(os.environ, KS_CONSOLE_TLS_DIR=str(tls_dir), KS_CONSOLE_TLS_PORT=str(TLS_PORT),
                                        KS_CONSOLE_HTTP_PORT=str(CONSOLE_PORT))))
        status, body = wait(lambda: ok(f"https://localhost:{TLS_PORT}/login", ca_pem)) or (None, "")
        seen["login_page_tls"] = {"status": status, "title": "<title>KubeSphere</title>" in body}
        seen["tls_untrusted"] = get(f"https://localhost:{TLS_PORT}/login")[0]
        browser = subprocess.run(
            [sys.executable, str(BROWSER), "--url", f"https://127.0.0.1:{TLS_PORT}", "--spki", spki,
             "--node", "ks33-node", "--out", str(shots), "--timeout", "90"],
            env=dict(os.environ, CONSOLE_PASSWORD=PASSWORD), capture_output=True, text=True, check=False)
        seen["browser"] = {"rc": browser.returncode, "out": browser.stdout + browser.stderr}
    finally:
        ka.stop_processes(processes)
    return seen


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))))
