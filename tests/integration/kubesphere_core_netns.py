"""KubeSphere's core from the bundle's images against a real kube-apiserver, inside a network namespace of its own.

Run by test_kubesphere_core.py under `unshare -n` (with loopback up): ks-controller-manager listens on every address
at fixed ports (8443 for its webhooks, 8080 for its metrics), which only a private network namespace keeps from
colliding with anything else on the machine. Starts etcd and kube-apiserver (kube_apiserver.py), applies KubeSphere's
CRDs as the kubesphere role ships them, its namespaces, the first user admin (plain password, as the role makes it)
and the GlobalRoleBinding admin; runs ks-apiserver and ks-controller-manager taken out of the bundle's images, and the
console taken out of its image with this machine's Node.js; then asks each what the role's checks ask, and opens the
console in headless Chromium (molecule/kubesphere/console_browser.py). Prints one JSON object of what it saw; every
judgement is the test's.

    kubesphere_core_netns.py BUNDLE WORKDIR SCREENSHOTS
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import kube_apiserver as ka  # noqa: E402  pylint: disable=wrong-import-position

CRDS = ROOT / "roles" / "kubesphere" / "files" / "crds" / "kubesphere.io.yml"
BROWSER = ROOT / "molecule" / "kubesphere" / "console_browser.py"
PASSWORD = "Slipway-Verify-8f3a"  # a throwaway cluster inside this namespace
CONSOLE_PORT = 8000


def wait(predicate, seconds=120.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    return None


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError:
        return None, ""


def ok(url):
    """The answer of a GET of ``url`` when it is 200, else None (to wait for)."""
    answer = get(url)
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
        (config / "kubesphere.yaml").write_text(yaml.safe_dump({
            "kubernetes": {"kubeconfig": str(api.kubeconfig)},
            "monitoring": {"endpoint": "http://127.0.0.1:1"},
            "authentication": {"jwtSecret": "x" * 32, "oauthOptions": {"clients": [
                {"name": "kubesphere", "secret": "kubesphere", "redirectURIs": ["*"]}]}}}))
        binaries = work / "bin"
        binaries.mkdir()
        ka._image_binary(bundle / "images" / "ks-apiserver.tar", "usr/local/bin/ks-apiserver",  # pylint: disable=protected-access
                         binaries / "ks-apiserver")
        ka._image_binary(bundle / "images" / "ks-controller-manager.tar",  # pylint: disable=protected-access
                         "usr/local/bin/controller-manager", binaries / "controller-manager")
        port = ka.free_port()
        processes.append(start([str(binaries / "ks-apiserver"), "--bind-address", "127.0.0.1", "--insecure-port",
                                str(port)], config, work / "ks-apiserver.log"))
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
        seen["token"] = token(port, "admin", PASSWORD)[0]
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
        browser = subprocess.run(
            [sys.executable, str(BROWSER), "--url", f"http://127.0.0.1:{CONSOLE_PORT}", "--node", "ks33-node",
             "--out", str(shots), "--timeout", "90"],
            env=dict(os.environ, CONSOLE_PASSWORD=PASSWORD), capture_output=True, text=True, check=False)
        seen["browser"] = {"rc": browser.returncode, "out": browser.stdout + browser.stderr}
    finally:
        ka.stop_processes(processes)
    return seen


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))))
