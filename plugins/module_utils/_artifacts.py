# Private to the slipway.cluster collection: no compatibility promise outside it.
"""The artifact list of the cluster model: every binary and image, where it comes from, its checksum.

Three sources: ``bundle`` (a directory on the controller, described by its manifest.yml; see
docs/bundle.md), ``upstream`` (official release URLs, checksums verified) and ``mirror`` (the same
files under the user's file server, kubespray's ``files_repo`` layout, and a registry mirror).
Pure Python: reading files is the caller's job (a ``checksum`` callable), so every case is a unit test.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Any, Callable, Mapping

from ansible_collections.slipway.cluster.plugins.module_utils._problems import Problem
from ansible_collections.slipway.cluster.plugins.module_utils._release_checksums import CHECKSUMS

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
# runc publishes one checksum file for every architecture's binary; tools/release_checksums.py reads its lines.
RUNC_SUMS = "https://github.com/opencontainers/runc/releases/download/{runc}/runc.sha256sum"
# etcd publishes one checksum file per release, a line per archive.
ETCD_SUMS = "https://github.com/etcd-io/etcd/releases/download/{etcd}/SHA256SUMS"
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap", "bandwidth", "tuning")
ARCHES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
# The architectures of the release files: the pinned table has every file of every supported release for each.
RELEASE_ARCHES = ("amd64", "arm64")
# The release files by the table's names (release_files), and the inventory setting that pins sums the table lacks.
RELEASE_FILE_NAMES = ("kubeadm", "kubelet", "kubectl", "runc", "crictl", "cni_plugins", "containerd", "etcd")
INVENTORY_CHECKSUMS = "slipway_artifacts_release_checksums"
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_RELEASE_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")


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
    upstream against KUBERNETES_RELEASES; a mirror by asking it from the controller for the release's kubeadm."""
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
    url = mirror_url.rstrip("/") + "/" + kubeadm.split("://", 1)[1]
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


def release_file_urls(file: str, version: str, arch: str) -> tuple[str, str]:
    """(the official URL of a release file, the URL of the checksum file upstream publishes for it)."""
    bare = _strip_v(version)
    if file in ("kubeadm", "kubelet", "kubectl"):
        url = UPSTREAM["kubernetes"].format(version=bare, arch=arch, name=file)
        return url, url + ".sha256"
    if file == "runc":
        return UPSTREAM["runc"].format(runc=version, arch=arch), RUNC_SUMS.format(runc=version)
    if file == "etcd":
        return UPSTREAM["etcd"].format(etcd=version, arch=arch), ETCD_SUMS.format(etcd=version)
    if file == "containerd":
        url = UPSTREAM["containerd"].format(containerd=version, containerd_bare=bare, arch=arch)
        return url, url + ".sha256sum"
    url = UPSTREAM[file].format(arch=arch, **{file: version})
    return url, url + ".sha256"


def release_files(kubernetes_version: str) -> list[dict[str, str]]:
    """{file, version} of every release file a cluster of this Kubernetes release installs (the keys of the pinned
    table, _release_checksums.CHECKSUMS); empty for a minor without companions."""
    companions = COMPANIONS.get(kubernetes_version.rsplit(".", 1)[0])
    if companions is None:
        return []
    version = "v" + _strip_v(kubernetes_version)
    return ([{"file": name, "version": version} for name in ("kubeadm", "kubelet", "kubectl")]
            + [{"file": "runc", "version": RUNTIME["runc"]}, {"file": "crictl", "version": companions["crictl"]},
               {"file": "cni_plugins", "version": companions["cni_plugins"]},
               {"file": "containerd", "version": RUNTIME["containerd"]}, {"file": "etcd", "version": companions["etcd"]}])


def pinned_sha256(file: str, version: str, arch: str, table: Mapping[str, Any] | None = None) -> str | None:
    """The sha256 the collection pins for a release file (None when the table has none)."""
    sums = CHECKSUMS if table is None else table
    return ((sums.get(file) or {}).get(version) or {}).get(arch)


def _nearest(value: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(value, known, n=1, cutoff=0.5)
    return f" (did you mean {close[0]}?)" if close else ""


def inventory_checksums(value: Any, table: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[Problem]]:
    """The sha256 an inventory pins for release files the collection's table lacks
    (``slipway_artifacts_release_checksums``: {file: {version: {arch: sha256}}}, the table's own shape, copied from
    upstream's published checksum files), and every problem with them: a shape that is not the table's, a file,
    version or architecture the collection installs none of, a sum that is no sha256, and a sum that differs from
    the one the collection pins for the same file (the table wins: it is refused, naming both)."""
    where = INVENTORY_CHECKSUMS
    shape = ("a mapping of file -> version -> architecture -> sha256, as python3 tools/release_checksums.py "
             "--published DIR --inventory prints it (docs/bundle.md)")
    if value in (None, "", {}):
        return {}, []
    if not isinstance(value, Mapping):
        return {}, [Problem(where, f"is {type(value).__name__}, not {shape}")]
    sums = CHECKSUMS if table is None else table
    found: dict[str, Any] = {}
    problems = []
    for file, versions in value.items():
        if file not in RELEASE_FILE_NAMES:
            problems.append(Problem(where, f"names file '{file}', which the collection installs none of"
                                    f"{_nearest(str(file), RELEASE_FILE_NAMES)}; the files are "
                                    f"{', '.join(RELEASE_FILE_NAMES)}"))
            continue
        if not isinstance(versions, Mapping):
            problems.append(Problem(f"{where}.{file}", f"is not a mapping of version -> architecture -> sha256 ({shape})"))
            continue
        for version, arches in versions.items():
            at = f"{where}.{file}.{version}"
            if not isinstance(version, str) or not _RELEASE_VERSION.match(version):
                bare = str(version).lstrip("v")
                problems.append(Problem(at, f"'{version}' is not a release version; write it as the release names it, "
                                        f"with its v (v{bare})"))
                continue
            if not isinstance(arches, Mapping):
                problems.append(Problem(at, f"is not a mapping of architecture -> sha256 ({shape})"))
                continue
            for arch, digest in arches.items():
                if arch not in RELEASE_ARCHES:
                    hint = f" (did you mean {ARCHES[arch]}?)" if arch in ARCHES else _nearest(str(arch), RELEASE_ARCHES)
                    problems.append(Problem(at, f"names architecture '{arch}'{hint}; the release files' are "
                                            f"{', '.join(RELEASE_ARCHES)}"))
                    continue
                if not isinstance(digest, str) or not _SHA256.match(digest):
                    problems.append(Problem(f"{at}.{arch}", "is not a sha256 (64 hexadecimal digits); copy it from "
                                            "the checksum file upstream publishes for the release"))
                    continue
                digest = digest.lower()
                pinned = pinned_sha256(file, version, arch, sums)
                if pinned is not None and pinned != digest:
                    problems.append(Problem(f"{at}.{arch}", (
                        f"is sha256 {digest}, but the collection pins {pinned} for {file} {version} ({arch}), from "
                        "upstream's published checksums; the collection's sum is the one used and the run is refused: "
                        "remove the entry (the collection pins this file already) or check where its sum was copied "
                        "from")))
                    continue
                found.setdefault(file, {}).setdefault(version, {})[arch] = digest
    return found, problems


def from_release(kubernetes_version: str, source: str, mirror_url: str = "",
                 registry: str = "", url_exists: Callable[[str], bool | None] | None = None,
                 warnings: list[Problem] | None = None,
                 table: Mapping[str, Any] | None = None,
                 inventory: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[Problem]]:
    """Official release files (``upstream``) or the same files under a mirror (``mirror``), each with the sha256
    pinned for it per architecture (``files``: {arch: {url, sha256, pinned_by}}): the collection's table
    (_release_checksums.CHECKSUMS, or ``table``), else the inventory's (``inventory``, as inventory_checksums returns
    it); sha256 None where neither has one: release_problems names them.

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

    def files(file: str, version: str, members: Callable[[str], list[str]] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for arch in RELEASE_ARCHES:
            sha256, pinned_by = pinned_sha256(file, version, arch, table), "the collection"
            if sha256 is None and inventory:
                sha256, pinned_by = pinned_sha256(file, version, arch, inventory), INVENTORY_CHECKSUMS
            out[arch] = {"url": located(release_file_urls(file, version, arch)[0]), "sha256": sha256,
                         "pinned_by": pinned_by if sha256 else None}
            if members is not None:
                out[arch]["members"] = members(arch)
        return {"file": file, "version": version, "files": out}

    version = "v" + kubernetes_version
    binaries = [_binary_entry(name, name, "kubernetes", **files(name, version)) for name in ("kubeadm", "kubelet", "kubectl")]
    binaries.append(_binary_entry("runc", "runc", "runtime", **files("runc", RUNTIME["runc"])))
    archives: dict[str, dict[str, Any]] = {
        "crictl": {**files("crictl", companions["crictl"], lambda arch: ["crictl"]), "group": "kubernetes"},
        "cni_plugins": {**files("cni_plugins", companions["cni_plugins"],
                                lambda arch: [f"./{name}" for name in CNI_PLUGINS]), "group": "kubernetes"},
        # containerd, its shim and ctr: every Kubernetes node unpacks them from containerd's release archive.
        "containerd": {**files("containerd", RUNTIME["containerd"],
                               lambda arch: [f"bin/{name}" for name in CONTAINERD_BINARIES]), "group": "runtime"},
        # etcd, etcdctl and etcdutl: only etcd members unpack them (stacked etcd runs kubeadm's image).
        "etcd": {**files("etcd", companions["etcd"],
                         lambda arch: [f"etcd-{companions['etcd']}-linux-{arch}/{name}" for name in ETCD_BINARIES]),
                 "group": "etcd"},
    }
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


def _release_entries(artifacts: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [*(artifacts.get("binaries") or []), *(artifacts.get("archives") or {}).values()]


def release_problems(artifacts: Mapping[str, Any], arches: list[str],
                     fetch: Callable[[str], tuple[str | None, str | None]] | None = None) -> list[Problem]:
    """What stops an install from release files (``slipway_artifacts_source`` upstream or mirror), found on the
    controller before any host is changed: a file of the release for which neither the collection nor the inventory
    (``slipway_artifacts_release_checksums``) pins a sha256 (any architecture; then nothing is read), and, with
    ``fetch``, every file of the ``arches`` (amd64, arm64) whose content, read from its server, is not what is pinned
    for it (each problem names who pins it). ``fetch(url)`` returns (the sha256 of what the server sends, None) or
    (None, why it could not be read). A ``.sha256`` file beside it on the same server is never asked: whoever can
    change the file can change that too."""
    if artifacts.get("source") not in ("upstream", "mirror"):
        return []
    entries = _release_entries(artifacts)
    unpinned = []
    for entry in entries:
        arches_without = [arch for arch in RELEASE_ARCHES if not entry["files"][arch]["sha256"]]
        if arches_without:
            unpinned.append(f"{entry['file']} {entry['version']} ({', '.join(arches_without)})")
    problems = []
    if unpinned:
        release = next((entry["version"] for entry in entries if entry["file"] == "kubeadm"), "")
        problems.append(Problem("slipway_artifacts_source", (
            f"is {artifacts['source']}, but neither the collection nor {INVENTORY_CHECKSUMS} pins a sha256 for "
            f"{', '.join(unpinned)}: a release file is installed only when its content is what upstream published. "
            f"Copy upstream's published sums into {INVENTORY_CHECKSUMS}: python3 tools/release_checksums.py "
            f"--published DIR --inventory --release {release.lstrip('v')} prints the entry to paste from the checksum "
            "files upstream publishes, saved under DIR (--fetch instead of --published DIR reads them from the "
            "official URLs; docs/bundle.md). Or set a release the collection pins, or use slipway_artifacts_source "
            "bundle")))
    # A release with an unpinned file is refused whole: nothing of it is read from any server.
    if fetch is None or problems:
        return problems
    for entry in entries:
        for arch in arches:
            wanted = entry["files"][arch]
            if not wanted["sha256"]:
                continue
            url = wanted["url"]
            found, error = fetch(url)
            if error is not None:
                problems.append(Problem(f"release file {url}", (
                    f"could not be read by the controller ({error}), which checks every release file against the "
                    "sha256 pinned for it before any host is changed; make the server reachable from the "
                    "controller, or use slipway_artifacts_source bundle")))
            elif found != wanted["sha256"]:
                problems.append(Problem(f"release file {url}", (
                    f"{entry['file']} {entry['version']} ({arch}): {wanted['pinned_by']} pins sha256 {wanted['sha256']}, "
                    f"the server sent a file with sha256 {found}; it was installed on no host. The server does not serve "
                    "what upstream released: replace the file with upstream's (docs/security.md)"
                    + (f", or correct {INVENTORY_CHECKSUMS} if its sum was not copied from upstream's published checksum "
                       "file" if wanted["pinned_by"] == INVENTORY_CHECKSUMS else ""))))
    return problems


def image_refs(artifacts: Mapping[str, Any]) -> dict[str, str]:
    """{short name: reference} of every image the artifacts know of."""
    return {name: image["ref"] for name, image in (artifacts.get("images") or {}).items()}
