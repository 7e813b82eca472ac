"""The files server and the image registry kubespray downloads from, on one address only.

Both listen on the podman network's gateway (the lab nodes reach it, nothing else does) or on
loopback for the smoke test. Each is a context manager: whatever happens inside, the process it
started is stopped when the block ends.
"""
from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REGISTRY_CONFIG = """version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
http:
  addr: {address}:{port}
"""


def gateway(network: str = "podman") -> str:
    """The address of the lab network's gateway on this machine (podman's default network: 10.88.0.1)."""
    out = subprocess.run(["podman", "network", "inspect", network], capture_output=True, text=True, check=True).stdout
    return str(json.loads(out)[0]["subnets"][0]["gateway"])


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited ({proc.returncode}): {log.read_text(encoding='utf-8')[-2000:]}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{url}: no answer within {timeout:.0f} s (log {log})")


def _port_free(address: str, port: int) -> None:
    with socket.socket() as sock:
        if sock.connect_ex((address, port)) == 0:
            raise RuntimeError(f"{address}:{port} is taken by another process: stop it first (ss -ltnp)")


@contextlib.contextmanager
def _process(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)  # pylint: disable=consider-using-with
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def file_server(root: Path, address: str, port: int, log: Path) -> Iterator[str]:
    """Python's static HTTP server on `root`; yields its base URL."""
    _port_free(address, port)
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", address, "--directory", str(root)]
    with _process(argv, log) as proc:
        url = f"http://{address}:{port}"
        _wait_http(url + "/", proc, log)
        yield url


@contextlib.contextmanager
def registry(storage: Path, address: str, port: int, log: Path) -> Iterator[str]:
    """Debian's docker-registry (distribution 2.8) over plain HTTP, storing under `storage`; yields host:port."""
    _port_free(address, port)
    storage.mkdir(parents=True, exist_ok=True)
    config = storage.parent / f"{storage.name}-config.yml"
    config.write_text(REGISTRY_CONFIG.format(root=storage, address=address, port=port), encoding="utf-8")
    with _process(["docker-registry", "serve", str(config)], log) as proc:
        host = f"{address}:{port}"
        _wait_http(f"http://{host}/v2/", proc, log)
        yield host


def push(archive: Path, ref: str, log: Path) -> None:
    """skopeo copy of a docker-archive into the plain-HTTP registry, as `ref` (host:port/path:tag)."""
    argv = ["skopeo", "copy", "--quiet", "--dest-tls-verify=false", f"docker-archive:{archive}", f"docker://{ref}"]
    with log.open("a", encoding="utf-8") as out:
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"skopeo copy {archive.name} -> {ref} failed (exit {proc.returncode}): "
                           + log.read_text(encoding="utf-8")[-1500:])


def manifest_digest(ref: str) -> str:
    """Read an image back from the registry: the digest of its manifest (skopeo inspect)."""
    out = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--raw", f"docker://{ref}"],
                         capture_output=True, text=True, check=True).stdout
    document = json.loads(out)
    if not document.get("layers"):
        raise RuntimeError(f"{ref}: the registry answered a manifest without layers: {out[:300]}")
    return str(document["config"]["digest"])
