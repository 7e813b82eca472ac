# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The artifact list of the cluster model: every binary and image, where it comes from, its checksum.

Three sources: ``bundle`` (a directory on the controller, described by its manifest.yml; see
docs/bundle.md), ``upstream`` (official release URLs, checksums verified) and ``mirror`` (the same
files under the user's file server, kubespray's ``files_repo`` layout, and a registry mirror).
Pure Python: reading files is the caller's job (a ``checksum`` callable), so every case is a unit test.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

from ansible_collections.slipway.cluster.plugins.module_utils._problems import Problem

BUNDLE_FORMAT_VERSION = 1
# Images only control planes (and external etcd members) run.
CONTROL_PLANE_IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
# Images only clusters with KubeSphere run (slipway_kubesphere_enabled): those of the bundle's components named
# kubesphere_* (its monitoring software, docs/bundle.md).
KUBESPHERE_COMPONENT_PREFIX = "kubesphere_"
KUBERNETES_BINARIES = ("kubeadm", "kubelet", "kubectl", "crictl")
ETCD_BINARIES = ("etcd", "etcdctl", "etcdutl")
# The container runtime of every Kubernetes node (the containerd role configures and runs it).
CONTAINERD_BINARIES = ("containerd", "containerd-shim-runc-v2", "ctr")
RUNTIME_BINARIES = (*CONTAINERD_BINARIES, "runc")
CNI_DIR = "/opt/cni/bin"
BIN_DIR = "/usr/local/bin"
# Where upstream's getting-started guide puts runc; the containerd role names it in config.toml.
SBIN_DIR = "/usr/local/sbin"
# The runtime of every node, whatever the Kubernetes release: containerd 2.3 (its LTS line, which containerd
# recommends for Kubernetes 1.36 and 1.37) and the runc release it pins. tools/bundle builds the same.
RUNTIME: dict[str, str] = {"containerd": "v2.3.7", "runc": "v1.5.3"}

# Versions of what kubeadm does not choose, per Kubernetes minor (tools/bundle builds the same).
# etcd: the release of kubeadm's etcd image for that minor (SupportedEtcdVersion), which the
# bundle reads from kubeadm's source; external etcd members run it as a systemd service.
COMPANIONS: dict[str, dict[str, str]] = {
    "1.37": {"crictl": "v1.37.0", "cni_plugins": "v1.9.1", "flannel": "v0.28.10",
             "flannel_cni_plugin": "v1.9.1-flannel3", "metrics_server": "v0.9.0", "busybox": "1.35.0",
             "etcd": "v3.7.0"},
    "1.36": {"crictl": "v1.36.0", "cni_plugins": "v1.9.1", "flannel": "v0.28.10",
             "flannel_cni_plugin": "v1.9.1-flannel3", "metrics_server": "v0.9.0", "busybox": "1.35.0",
             "etcd": "v3.6.8"},
}
# The newest patch release of each supported minor that this collection knows of. Kubernetes numbers
# its patches without gaps, so 1.37.0 up to 1.37.<newest> exist: with slipway_artifacts_source upstream
# a version outside is refused before any contact (no network is needed to know it). To use a patch
# released after this collection: raise its number here (one line), or take the files from a bundle or a
# mirror, whose own contents are checked instead. docs/preflight.md says the same.
KUBERNETES_RELEASES: dict[str, int] = {"1.36": 5, "1.37": 2}
ADDON_REPOSITORIES = {
    "flannel": "ghcr.io/flannel-io/flannel",
    "flannel-cni-plugin": "ghcr.io/flannel-io/flannel-cni-plugin",
    "metrics-server": "registry.k8s.io/metrics-server/metrics-server",
    "busybox": "docker.io/library/busybox",
}
UPSTREAM = {
    "kubernetes": "https://dl.k8s.io/release/v{version}/bin/linux/{arch}/{name}",
    "crictl": "https://github.com/kubernetes-sigs/cri-tools/releases/download/{crictl}/crictl-{crictl}-linux-{arch}.tar.gz",
    "cni_plugins": "https://github.com/containernetworking/plugins/releases/download/"
                   "{cni_plugins}/cni-plugins-linux-{arch}-{cni_plugins}.tgz",
    "etcd": "https://github.com/etcd-io/etcd/releases/download/{etcd}/etcd-{etcd}-linux-{arch}.tar.gz",
    "containerd": "https://github.com/containerd/containerd/releases/download/{containerd}/"
                  "containerd-{containerd_bare}-linux-{arch}.tar.gz",
    "runc": "https://github.com/opencontainers/runc/releases/download/{runc}/runc.{arch}",
}
# runc publishes one checksum file for every architecture's binary; get_url picks the binary's line.
RUNC_SUMS = "https://github.com/opencontainers/runc/releases/download/{runc}/runc.sha256sum"
# etcd publishes one checksum file per release; get_url picks the archive's line out of it.
ETCD_SUMS = "https://github.com/etcd-io/etcd/releases/download/{etcd}/SHA256SUMS"
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap", "bandwidth", "tuning")
ARCHES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def _strip_v(version: str) -> str:
    return str(version).lstrip("v")


def _binary_entry(path: str, name: str, group: str, **extra: Any) -> dict[str, Any]:
    dest_dir = CNI_DIR if group == "cni" else SBIN_DIR if name == "runc" else BIN_DIR
    return {"name": name, "dest": f"{dest_dir}/{name}", "group": group, **extra}


def _group_of(relpath: str, name: str) -> str | None:
    if relpath.startswith("bin/cni/"):
        return "cni"
    if name in KUBERNETES_BINARIES:
        return "kubernetes"
    if name in ETCD_BINARIES:
        return "etcd"
    if name in RUNTIME_BINARIES:
        return "runtime"
    return None


def bundle_versions(manifest: Mapping[str, Any]) -> list[str]:
    """The Kubernetes releases a bundle holds: its own, then those under ``releases`` (docs/bundle.md)."""
    return [_strip_v(release.get("kubernetes_version", "")) for release in [manifest, *(manifest.get("releases") or [])]]


def bundle_release(manifest: Mapping[str, Any], kubernetes_version: str) -> Mapping[str, Any] | None:
    """The part of the manifest (top level or one of ``releases``) with the files of this Kubernetes release."""
    for release in [manifest, *(manifest.get("releases") or [])]:
        if _strip_v(release.get("kubernetes_version", "")) == kubernetes_version:
            return release
    return None


def from_bundle(
    manifest: Mapping[str, Any] | None, bundle_dir: str, kubernetes_version: str, checksum: Callable[[str], str | None],
) -> tuple[dict[str, Any], list[Problem]]:
    """Check a bundle against its manifest and the wanted version; return (artifacts, problems).

    ``checksum(path)`` returns the sha256 of a file, or None when it does not exist.
    """
    where = "slipway_artifacts_bundle_dir"
    if manifest is None:
        return {}, [Problem(where, f"{bundle_dir} has no manifest.yml; build one with 'make bundle' or point it at a bundle")]
    problems: list[Problem] = []
    if manifest.get("format_version") != BUNDLE_FORMAT_VERSION:
        problems.append(Problem(where, f"{bundle_dir}/manifest.yml has format_version {manifest.get('format_version')!r}; "
                                       f"this collection reads format {BUNDLE_FORMAT_VERSION}"))
        return {}, problems
    release = bundle_release(manifest, kubernetes_version)
    if release is None:
        bundled = bundle_versions(manifest)
        problems.append(Problem(
            "slipway_kubernetes_version",
            f"is {kubernetes_version} but the bundle at {bundle_dir} holds Kubernetes {' and '.join(bundled)}; "
            f"set slipway_kubernetes_version to one of them or build a bundle for {kubernetes_version}",
        ))
        release = manifest
    binaries, images = [], {}
    for entry in list(release.get("binaries") or []) + list(release.get("images") or []):
        relpath = str(entry.get("path", ""))
        full = os.path.join(bundle_dir, relpath)
        actual = checksum(full)
        if actual is None:
            problems.append(Problem(f"bundle file {relpath}", f"is listed in manifest.yml but missing from {bundle_dir}; "
                                                              "copy the whole bundle again"))
            continue
        if actual != entry.get("sha256"):
            problems.append(Problem(f"bundle file {relpath}", f"manifest.yml says sha256 {entry.get('sha256')}, "
                                                              f"the file has sha256 {actual}; copy or build the bundle again"))
            continue
        # A release under releases/vX.Y.Z/ has the same bin/ and images/ layout as the top of the bundle.
        inner = relpath.split("/", 2)[-1] if relpath.startswith("releases/") else relpath
        if inner.startswith("images/"):
            name = str(entry.get("name"))
            images[name] = {"ref": entry.get("ref"), "src": full, "sha256": actual,
                            "control_plane_only": name in CONTROL_PLANE_IMAGES,
                            "kubesphere_only": str(entry.get("component") or "").startswith(KUBESPHERE_COMPONENT_PREFIX)}
            continue
        name = os.path.basename(relpath)
        group = _group_of(inner, name)
        if group:
            binaries.append(_binary_entry(relpath, name, group, src=full, sha256=actual))
    # KubeSphere's images by their kubesphere_images key (prometheus-operator: prometheus_operator), which the
    # kubesphere role and slipway-operator run instead of kubesphere_images' entries.
    kubesphere_images = {name.replace("-", "_"): image["ref"] for name, image in sorted(images.items()) if image["kubesphere_only"]}
    # The runtime's release: its components entry in this release (or at the top of the bundle).
    components = release.get("components") or manifest.get("components") or {}
    runtime = {name: str((components.get(name) or {}).get("version", "")) for name in RUNTIME}
    return ({"source": "bundle", "bundle_dir": bundle_dir, "binaries": binaries, "images": images,
             "kubesphere_images": kubesphere_images, "runtime": runtime}, problems)


def released(kubernetes_version: str) -> bool:
    """Whether this patch release of a supported minor is one this collection knows was released."""
    minor, dummy, patch = kubernetes_version.rpartition(".")
    newest = KUBERNETES_RELEASES.get(minor)
    return newest is not None and patch.isdigit() and int(patch) <= newest


def _release_problem(kubernetes_version: str, source: str, mirror_url: str,
                     url_exists: Callable[[str], bool | None] | None) -> tuple[Problem | None, Problem | None]:
    """(problem, warning) about whether the files of this release exist in the source, found before any contact:
    upstream against KUBERNETES_RELEASES; a mirror by asking it from the controller for kubeadm's checksum file."""
    minor = kubernetes_version.rsplit(".", 1)[0]
    known = f"{minor}.0 to {minor}.{KUBERNETES_RELEASES[minor]}" if minor in KUBERNETES_RELEASES else "none"
    if source == "upstream":
        if released(kubernetes_version):
            return None, None
        return Problem("slipway_kubernetes_version", (
            f"{kubernetes_version} is not a Kubernetes release this collection knows of ({known}); set one of them. "
            "A patch released since: add it to KUBERNETES_RELEASES in plugins/module_utils/_artifacts.py, or use a "
            "bundle or a mirror that has it")), None
    if not mirror_url or url_exists is None:
        return None, None
    kubeadm = UPSTREAM["kubernetes"].format(version=kubernetes_version, arch="amd64", name="kubeadm")
    url = mirror_url.rstrip("/") + "/" + kubeadm.split("://", 1)[1] + ".sha256"
    found = url_exists(url)
    if found is False:
        return Problem("slipway_kubernetes_version", (
            f"{kubernetes_version} is not on the mirror slipway_artifacts_mirror_url: {url} is not there; copy the "
            f"release's files to the mirror (docs/bundle.md) or set a version it has")), None
    if found is None and not released(kubernetes_version):
        return None, Problem("slipway_kubernetes_version", (
            f"{kubernetes_version} could not be checked: the mirror {mirror_url} did not answer the controller, and "
            f"the collection knows {known}; the nodes will fail to download it if the mirror does not have it"))
    return None, None


def from_release(kubernetes_version: str, source: str, arch: str = "amd64", mirror_url: str = "",
                 registry: str = "", url_exists: Callable[[str], bool | None] | None = None,
                 warnings: list[Problem] | None = None) -> tuple[dict[str, Any], list[Problem]]:
    """Official release files (``upstream``) or the same files under a mirror (``mirror``).

    Image references stay the upstream ones; with a ``registry`` mirror, containerd is told to
    fetch them from it, so manifests never need rewriting. ``url_exists(url)``: True or False when the
    controller reached the URL's server, None when it did not (no network); ``warnings`` gets what
    could not be checked.
    """
    problems: list[Problem] = []
    minor = kubernetes_version.rsplit(".", 1)[0]
    companions = COMPANIONS.get(minor)
    if companions is None:
        return {}, [Problem("slipway_kubernetes_version", f"no artifact versions are known for Kubernetes {minor}")]
    if source == "mirror" and not mirror_url:
        problems.append(Problem("slipway_artifacts_mirror_url", "slipway_artifacts_source is mirror: set it to your file server, "
                                                                "e.g. https://files.example.com (kubespray's files_repo layout)"))
    problem, warning = _release_problem(kubernetes_version, source, mirror_url, url_exists)
    problems.extend([problem] if problem else [])
    if warning is not None and warnings is not None:
        warnings.append(warning)

    def located(url: str) -> str:
        if source != "mirror":
            return url
        return mirror_url.rstrip("/") + "/" + url.split("://", 1)[1]

    values = {"version": kubernetes_version, "arch": arch, **companions, **RUNTIME,
              "containerd_bare": _strip_v(RUNTIME["containerd"])}
    binaries = []
    for name in ("kubeadm", "kubelet", "kubectl"):
        url = located(UPSTREAM["kubernetes"].format(name=name, **values))
        binaries.append(_binary_entry(name, name, "kubernetes", url=url, checksum=f"sha256:{url}.sha256"))
    url = located(UPSTREAM["runc"].format(**values))
    binaries.append(_binary_entry("runc", "runc", "runtime", url=url, checksum="sha256:" + located(RUNC_SUMS.format(**values))))
    archives: dict[str, dict[str, Any]] = {}
    for name in ("crictl", "cni_plugins"):
        url = located(UPSTREAM[name].format(**values))
        archives[name] = {"url": url, "checksum": f"sha256:{url}.sha256", "group": "kubernetes"}
    # containerd, its shim and ctr: every Kubernetes node unpacks them from containerd's release archive.
    url = located(UPSTREAM["containerd"].format(**values))
    archives["containerd"] = {"url": url, "checksum": f"sha256:{url}.sha256sum", "group": "runtime",
                              "members": [f"bin/{name}" for name in CONTAINERD_BINARIES]}
    # etcd, etcdctl and etcdutl: only external etcd members unpack them (stacked etcd runs kubeadm's image).
    url = located(UPSTREAM["etcd"].format(**values))
    archives["etcd"] = {"url": url, "checksum": "sha256:" + located(ETCD_SUMS.format(**values)), "group": "etcd",
                        "members": [f"etcd-{companions['etcd']}-linux-{arch}/{name}" for name in ETCD_BINARIES]}
    images = {
        "flannel": f"{ADDON_REPOSITORIES['flannel']}:{companions['flannel']}",
        "flannel-cni-plugin": f"{ADDON_REPOSITORIES['flannel-cni-plugin']}:{companions['flannel_cni_plugin']}",
        "metrics-server": f"{ADDON_REPOSITORIES['metrics-server']}:{companions['metrics_server']}",
        "busybox": f"{ADDON_REPOSITORIES['busybox']}:{companions['busybox']}",
    }
    return {
        "source": source,
        "binaries": binaries,
        "archives": archives,
        "cni_plugins": list(CNI_PLUGINS),
        # kubeadm's own images (control plane, etcd, coredns, pause) are listed by kubeadm on the node.
        "images": {name: {"ref": ref, "control_plane_only": False, "kubesphere_only": False} for name, ref in images.items()},
        "registry": registry,
        "runtime": dict(RUNTIME),
    }, problems


def image_refs(artifacts: Mapping[str, Any]) -> dict[str, str]:
    """{short name: reference} of every image the artifacts know of."""
    return {name: image["ref"] for name, image in (artifacts.get("images") or {}).items()}
