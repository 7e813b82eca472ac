"""What kubespray needs that the bundle has not, built once and cached outside the checkout.

Each step is stamped with the sha256 of its inputs; a step whose stamp matches is not run again.
  - kubespray's own virtualenv from its requirements.txt
  - nerdctl, built from its Go module tag (kubespray pulls every image with it)
  - a haproxy image FROM scratch with Debian's haproxy binary and the libraries it loads
  - the Debian packages the harness runs on the machine: docker-registry, skopeo, haproxy
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

# kubespray 46dbdd399 pins nerdctl 2.3.0 (the first amd64 key of its nerdctl_archive_checksums), which the Go
# module proxy does not serve (`go list -m github.com/containerd/nerdctl/v2@v2.3.0`: "not available"). v2.3.1 it
# serves, but the checksum database does not know it (`go mod download`: "verifying go.mod: ... 404 Not Found"), and
# nothing unverified is built. v2.2.2 is the newest release that both serve and that kubespray lists itself.
NERDCTL_PIN = "2.3.0"
NERDCTL_VERSION = "2.2.2"
NERDCTL_MODULE = "github.com/containerd/nerdctl/v2"
HOST_PACKAGES = ("docker-registry", "skopeo", "haproxy")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "slipway" / "compare"


def _stamp(inputs: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _fresh(stamp_file: Path, stamp: str, output: Path) -> bool:
    return output.exists() and stamp_file.is_file() and stamp_file.read_text(encoding="utf-8") == stamp


def _run(argv: list[str], log: Path, **kwargs: object) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8").splitlines()[-15:]
        raise RuntimeError(f"{' '.join(argv[:3])} failed (exit {proc.returncode}), log {log}:\n" + "\n".join(tail))


def host_packages(log: Path) -> list[str]:
    """Install the Debian packages the harness runs, when missing; the names installed."""
    missing = [name for name in HOST_PACKAGES
               if subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True,
                                 check=False).stdout != "install ok installed"]
    if missing:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
        try:
            _run(install, log, env=env)
        except RuntimeError:  # package lists missing or stale (a fresh machine): read them, then once more
            _run(["apt-get", "update"], log, env=env)
            _run(install, log, env=env)
    return missing


def kubespray_venv(source: Path, cache: Path, log: Path) -> Path:
    """kubespray's virtualenv from its requirements.txt; the path of its ansible-playbook."""
    requirements = (source / "requirements.txt").read_text(encoding="utf-8")
    venv = cache / "venv"
    stamp = _stamp({"requirements": requirements, "python": shutil.which("python3") or ""})
    stamp_file = cache / "venv.stamp"
    playbook = venv / "bin" / "ansible-playbook"
    if not _fresh(stamp_file, stamp, playbook):
        shutil.rmtree(venv, ignore_errors=True)
        _run(["python3", "-m", "venv", str(venv)], log)
        _run([str(venv / "bin" / "pip"), "install", "--quiet", "-r", str(source / "requirements.txt")], log)
        stamp_file.write_text(stamp, encoding="utf-8")
    return playbook


def nerdctl(cache: Path, log: Path, version: str = NERDCTL_VERSION) -> Path:
    """nerdctl built from its Go module at the tag, static (CGO_ENABLED=0)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    go_version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout.strip()
    out = cache / f"nerdctl-{version}"
    stamp = _stamp({"version": version, "go": go_version})
    stamp_file = cache / f"nerdctl-{version}.stamp"
    if _fresh(stamp_file, stamp, out):
        return out
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    with tempfile.TemporaryDirectory(dir=cache) as work:
        # The module's own go.mod and go.sum, fetched through the proxy: `go mod download -json` names its dir.
        info = subprocess.run([go, "mod", "download", "-json", f"{NERDCTL_MODULE}@v{version}"], capture_output=True,
                              text=True, check=False, env=env, cwd=work)
        answer = json.loads(info.stdout or "{}")
        if info.returncode != 0 or "Dir" not in answer:
            raise RuntimeError(f"go mod download {NERDCTL_MODULE}@v{version}: {answer.get('Error') or info.stderr}")
        module_dir = Path(answer["Dir"])
        tree = Path(work) / "src"
        shutil.copytree(module_dir, tree)
        for path in tree.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        _nested_modules(tree)
        # cmd/nerdctl/helpers/testing_linux.go (package "testing" helpers, used by nerdctl's tests only) is the one
        # file of the program's packages that imports the test framework mod/tigron: left out of the build with an
        # overlay, the tree itself unchanged. Should the program need it, the build fails and says so.
        overlay = Path(work) / "overlay.json"
        overlay.write_text(json.dumps({"Replace": {str(tree / "cmd/nerdctl/helpers/testing_linux.go"): ""}}),
                           encoding="utf-8")
        ldflags = f"-s -w -X {NERDCTL_MODULE}/pkg/version.Version=v{version}"
        _run([go, "build", "-trimpath", f"-overlay={overlay}", "-ldflags", ldflags, "-o", str(out), "./cmd/nerdctl"],
             log, env=env, cwd=tree)
    stamp_file.write_text(stamp, encoding="utf-8")
    return out


def _nested_modules(tree: Path) -> None:
    """A module zip leaves out the nested modules of its repository, and the proxy serves no version
    of nerdctl's mod/tigron (403), which its go.mod replaces with ./mod/tigron for its tests only:
    cmd/nerdctl imports none of it, so the directory only has to name the module for `go build`."""
    for line in (tree / "go.mod").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "replace" and parts[-1].startswith("./"):
            nested = tree / parts[-1]
            if not nested.exists():
                nested.mkdir(parents=True)
                (nested / "go.mod").write_text(f"module {parts[1]}\n", encoding="utf-8")


def _libraries(binary: str) -> list[str]:
    """The shared libraries a dynamically linked program loads (ldd), its loader included."""
    output = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    paths = []
    for line in output.splitlines():
        parts = line.split()
        for part in parts:
            if part.startswith("/"):
                paths.append(part)
                break
    return paths


HAPROXY_REF = "docker.io/library/haproxy:debian"


def haproxy_image(cache: Path, log: Path, ref: str = HAPROXY_REF) -> Path:
    """A docker-archive of `ref`: Debian's haproxy and its libraries in one layer FROM scratch
    (the registry gets it under its own name: skopeo copy names the destination)."""
    haproxy = "/usr/sbin/haproxy"
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "haproxy"], capture_output=True, text=True,
                             check=True).stdout
    out = cache / "haproxy.tar"
    stamp = _stamp({"ref": ref, "haproxy": version})
    stamp_file = cache / "haproxy.stamp"
    if _fresh(stamp_file, stamp, out):
        return out
    files = [haproxy, *_libraries(haproxy)]
    with tempfile.TemporaryDirectory(dir=cache) as work:
        layer = Path(work) / "layer.tar"
        with tarfile.open(layer, "w") as tar:
            for directory in ("etc", "etc/haproxy", "run", "tmp", "var", "var/lib", "var/lib/haproxy"):
                info = tarfile.TarInfo(directory)
                info.type, info.mode = tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755
                tar.addfile(info)
            for path in files:
                tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
            for name, text in (("etc/passwd", "root:x:0:0::/:/bin/false\nhaproxy:x:99:99::/:/bin/false\n"),
                               ("etc/group", "root:x:0:\nhaproxy:x:99:\n")):
                data = text.encode()
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, fileobj=io.BytesIO(data))
        write_docker_archive(layer, ref, ["/usr/sbin/haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"], out)
    _run(["tar", "-tf", str(out)], log)
    stamp_file.write_text(stamp, encoding="utf-8")
    return out


def write_docker_archive(layer: Path, ref: str, entrypoint: list[str], out: Path) -> None:
    """A single-layer docker-archive (layer tar, config JSON, manifest.json) tagged `ref`."""
    layer_digest = hashlib.sha256(layer.read_bytes()).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": entrypoint, "Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_digest}"]},
    }, sort_keys=True).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [ref], "Layers": [f"{layer_digest}/layer.tar"]}]).encode()
    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, "w") as tar:
        tar.add(layer, arcname=f"{layer_digest}/layer.tar")
        for name, data in ((config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, fileobj=io.BytesIO(data))
    tmp.replace(out)
