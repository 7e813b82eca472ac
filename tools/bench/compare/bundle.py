"""The bundle's releases, and its files repacked into kubespray's files_repo layout.

kubespray downloads every binary from upstream release URLs; its offline docs
(docs/operations/offline-environment.md) serve them from a files_repo "with the original domains as
top directories". The tree written here holds the bundle's own binaries under those paths, packed
the way the upstream release archives are, so that kubespray installs the same files slipway does.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import shutil
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ARCH = "amd64"


class BundleError(Exception):
    """The bundle lacks something kubespray needs: one line for the user."""


@dataclasses.dataclass(frozen=True)
class Release:
    """One Kubernetes release of the bundle: versions without the v, files relative to the bundle."""

    kubernetes: str
    versions: dict[str, str]  # component -> version, e.g. {"etcd": "3.6.8", "crictl": "1.36.0"}
    binaries: dict[str, str]  # file name (cni/NAME for the CNI plugins) -> path relative to the bundle
    images: dict[str, str]  # short name -> full reference
    image_paths: dict[str, str]  # short name -> archive path relative to the bundle
    image_tags: dict[str, str]  # component -> image tag kubeadm uses (etcd, coredns)


def _release(entry: dict[str, Any]) -> Release:
    prefix = "bin/"
    binaries = {}
    for binary in entry.get("binaries", []):
        path = binary["path"]
        binaries[path[path.index(prefix) + len(prefix):]] = path
    components = entry.get("components", {})
    return Release(
        kubernetes=entry["kubernetes_version"].lstrip("v"),
        versions={name: str(c.get("version", "")).lstrip("v") for name, c in components.items()},
        binaries=binaries,
        images={image["name"]: image["ref"] for image in entry.get("images", [])},
        image_paths={image["name"]: image["path"] for image in entry.get("images", [])},
        image_tags={name: c["image_tag"] for name, c in components.items() if "image_tag" in c},
    )


def releases(manifest: dict[str, Any]) -> dict[str, Release]:
    """Every release of a bundle's manifest.yml by Kubernetes version (no v), the top one first."""
    found = {}
    for entry in [manifest, *(manifest.get("releases") or [])]:
        release = _release(entry)
        found[release.kubernetes] = release
    return found


def upgrade_pair(manifest: dict[str, Any]) -> tuple[Release, Release]:
    """(older, current): the cluster is made at the older release and upgraded to the top one."""
    found = list(releases(manifest).values())
    if len(found) < 2:
        raise BundleError("the bundle holds one Kubernetes release: the upgrade step needs an older one (docs/bundle.md)")
    return found[-1], found[0]


REQUIRED_COMPONENTS = ("etcd", "cni_plugins", "crictl", "containerd", "runc")


def check_release(release: Release) -> None:
    """kubespray installs containerd and runc from release archives: the bundle must carry them."""
    missing = [c for c in REQUIRED_COMPONENTS if not release.versions.get(c)]
    if missing:
        raise BundleError(
            f"the bundle's release {release.kubernetes} has no {', '.join(missing)}: kubespray installs the "
            "container runtime from release archives, and both installers must run the same one; build a bundle "
            "with containerd 2 and runc (docs/bundle.md, `make bundle`)")


@dataclasses.dataclass(frozen=True)
class Served:
    """A file in the files_repo: its path under the root and the checksum kubespray checks."""

    path: str
    sha256: str
    version: str = ""

    @property
    def checksum(self) -> str:
        return f"sha256:{self.sha256}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_tar_gz(out: Path, members: Iterable[tuple[str, Path | None]]) -> None:
    """A reproducible .tar.gz: (name, file) members, None for a directory; fixed owners and times,
    so the same inputs give the same checksum on every run (kubespray compares it)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as compressed, \
            tarfile.open(fileobj=compressed, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, source in members:
            info = tarfile.TarInfo(name)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = 0
            if source is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            info.size, info.mode = source.stat().st_size, 0o755
            with source.open("rb") as stream:
                tar.addfile(info, fileobj=stream)
    tmp.replace(out)


def _copy(source: Path, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or _sha256(out) != _sha256(source):
        shutil.copyfile(source, out)
        out.chmod(0o755)


def files_repo(bundle: Path, release: Release, root: Path, nerdctl: tuple[str, Path] | None = None) -> dict[str, Served]:
    """Write the release's files under `root` in the files_repo layout; {download name: Served}.

    Names are kubespray's download names: kubeadm, kubelet, kubectl, etcd, cni, crictl, containerd,
    runc, nerdctl (nerdctl is no bundle file: (version, binary) built by prepare.nerdctl)."""
    check_release(release)

    def binary(name: str) -> Path:
        if name not in release.binaries:
            raise BundleError(f"the bundle's release {release.kubernetes} has no bin/{name}")
        return bundle / release.binaries[name]

    served: dict[str, Served] = {}

    def done(name: str, relative: str, version: str) -> None:
        served[name] = Served(relative, _sha256(root / relative), version)

    k8s = f"dl.k8s.io/release/v{release.kubernetes}/bin/linux/{ARCH}"
    for name in ("kubeadm", "kubelet", "kubectl"):
        _copy(binary(name), root / k8s / name)
        done(name, f"{k8s}/{name}", release.kubernetes)

    etcd = release.versions["etcd"]
    top = f"etcd-v{etcd}-linux-{ARCH}"
    path = f"github.com/etcd-io/etcd/releases/download/v{etcd}/{top}.tar.gz"
    write_tar_gz(root / path, [(top, None)] + [(f"{top}/{n}", binary(n)) for n in ("etcd", "etcdctl", "etcdutl")])
    done("etcd", path, etcd)

    cni = release.versions["cni_plugins"]
    plugins = sorted(n for n in release.binaries if n.startswith("cni/"))
    path = f"github.com/containernetworking/plugins/releases/download/v{cni}/cni-plugins-linux-{ARCH}-v{cni}.tgz"
    write_tar_gz(root / path, [("./", None)] + [(f"./{n.split('/', 1)[1]}", binary(n)) for n in plugins])
    done("cni", path, cni)

    crictl = release.versions["crictl"]
    path = f"github.com/kubernetes-sigs/cri-tools/releases/download/v{crictl}/crictl-v{crictl}-linux-{ARCH}.tar.gz"
    write_tar_gz(root / path, [("crictl", binary("crictl"))])
    done("crictl", path, crictl)

    containerd = release.versions["containerd"]
    path = f"github.com/containerd/containerd/releases/download/v{containerd}/containerd-{containerd}-linux-{ARCH}.tar.gz"
    write_tar_gz(root / path, [("bin/", None)] + [(f"bin/{n}", binary(n))
                                                  for n in ("containerd", "containerd-shim-runc-v2", "ctr")])
    done("containerd", path, containerd)

    runc = release.versions["runc"]
    path = f"github.com/opencontainers/runc/releases/download/v{runc}/runc.{ARCH}"
    _copy(binary("runc"), root / path)
    done("runc", path, runc)

    if nerdctl:
        version, program = nerdctl
        path = f"github.com/containerd/nerdctl/releases/download/v{version}/nerdctl-{version}-linux-{ARCH}.tar.gz"
        write_tar_gz(root / path, [("nerdctl", program)])
        done("nerdctl", path, version)
    return served
