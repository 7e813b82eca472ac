"""The `download` backend: official release files and upstream images, checksums verified.

For a machine with internet access that prepares a bundle for an air-gapped cluster. It needs
network access to dl.k8s.io, github.com (release files of cri-tools, CNI plugins and etcd) and
the image registries (registry.k8s.io, ghcr.io, docker.io), the release files of containerd and runc, and skopeo (preferred) or ctr with
a running containerd to save images (docs/bundle.md).
"""

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import urllib.request

from . import kubeadm, steps, versions
from .result import BackendResult

K8S_BINARY_URL = "https://dl.k8s.io/release/{version}/bin/linux/{arch}/{name}"
CRICTL_URL = ("https://github.com/kubernetes-sigs/cri-tools/releases/download/"
              "{version}/crictl-{version}-linux-{arch}.tar.gz")
CNI_PLUGINS_URL = ("https://github.com/containernetworking/plugins/releases/download/"
                   "{version}/cni-plugins-linux-{arch}-{version}.tgz")
ETCD_URL = ("https://github.com/etcd-io/etcd/releases/download/"
            "{version}/etcd-{version}-linux-{arch}.tar.gz")
ETCD_SUMS_URL = "https://github.com/etcd-io/etcd/releases/download/{version}/SHA256SUMS"
# The container runtime: containerd's release archive (bin/containerd, bin/ctr,
# bin/containerd-shim-runc-v2, ...) with its .sha256sum, and runc's static binary, whose
# runc.sha256sum lists every architecture's.
CONTAINERD_URL = ("https://github.com/containerd/containerd/releases/download/"
                  "{version}/containerd-{bare}-linux-{arch}.tar.gz")
RUNC_URL = "https://github.com/opencontainers/runc/releases/download/{version}/runc.{arch}"
RUNC_SUMS_URL = "https://github.com/opencontainers/runc/releases/download/{version}/runc.sha256sum"

# The test image's tag; the source backend uses the busybox version of Debian bookworm's
# busybox-static, which is this one.
BUSYBOX_TAG = "1.35.0"

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


class ChecksumError(Exception):
    pass


class DownloadError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# what to fetch

def kubernetes_binary_urls(version, arch="amd64"):
    """{name: (url, checksum url)} of kubeadm, kubelet, kubectl."""
    urls = {}
    for name in ("kubeadm", "kubelet", "kubectl"):
        url = K8S_BINARY_URL.format(version=version, arch=arch, name=name)
        urls[name] = (url, url + ".sha256")
    return urls


def archive_urls(kubernetes_version, etcd_version, arch="amd64"):
    """{component: (url, checksum url)} of the release archives."""
    comp = versions.companions(kubernetes_version)
    crictl = CRICTL_URL.format(version=comp["crictl"], arch=arch)
    cni = CNI_PLUGINS_URL.format(version=comp["cni_plugins"], arch=arch)
    etcd = ETCD_URL.format(version=etcd_version, arch=arch)
    return {
        "crictl": (crictl, crictl + ".sha256"),
        "cni_plugins": (cni, cni + ".sha256"),
        "etcd": (etcd, ETCD_SUMS_URL.format(version=etcd_version)),
    }


def image_refs(kubernetes_version, kubeadm_refs):
    """{name: full reference} of every image: kubeadm's own list plus the add-ons'."""
    comp = versions.companions(kubernetes_version)
    repos = versions.IMAGE_REPOSITORIES
    refs = dict(kubeadm_refs)
    refs["flannel"] = "%s:%s" % (repos["flannel"], comp["flannel"])
    refs["flannel-cni-plugin"] = "%s:%s" % (repos["flannel-cni-plugin"],
                                            comp["flannel_cni_plugin"])
    refs["metrics-server"] = "%s:%s" % (repos["metrics-server"], comp["metrics_server"])
    refs["busybox"] = "%s:%s" % (repos["busybox"], BUSYBOX_TAG)
    return refs


def runtime_urls(arch="amd64"):
    """{component: (url, checksum url)} of containerd's release archive and runc's binary."""
    containerd = versions.CONTAINERD["version"]
    runc = versions.RUNC["version"]
    archive = CONTAINERD_URL.format(version=containerd, bare=containerd.lstrip("v"), arch=arch)
    return {
        "containerd": (archive, archive + ".sha256sum"),
        "runc": (RUNC_URL.format(version=runc, arch=arch), RUNC_SUMS_URL.format(version=runc)),
    }


IMAGE_COMPONENTS = {
    "kube-apiserver": "kubernetes", "kube-controller-manager": "kubernetes",
    "kube-scheduler": "kubernetes", "kube-proxy": "kubernetes", "etcd": "etcd",
    "coredns": "coredns", "pause": "pause", "flannel": "flannel",
    "flannel-cni-plugin": "flannel_cni_plugin", "metrics-server": "metrics_server",
    "busybox": "busybox",
}


# ---------------------------------------------------------------------------------------------
# checksums

def parse_checksum(text, filename=None):
    """The sha256 for ``filename`` from a checksum file: either a bare hash (dl.k8s.io's .sha256)
    or `sha256sum` lines ("HASH  NAME" or "HASH *NAME"; SHA256SUMS lists many files)."""
    candidates = []
    for line in text.splitlines():
        parts = line.strip().split()
        if not parts:
            continue
        digest = parts[0]
        if not _HEX64.match(digest):
            raise ChecksumError("not a sha256 checksum line: %r" % line)
        name = parts[1].lstrip("*") if len(parts) > 1 else None
        candidates.append((digest.lower(), name))
    if not candidates:
        raise ChecksumError("empty checksum file")
    if filename is not None:
        named = [digest for digest, name in candidates
                 if name is not None and os.path.basename(name) == filename]
        if named:
            return named[0]
        if len(candidates) > 1 or candidates[0][1] is not None:
            raise ChecksumError("no checksum for %s in the checksum file" % filename)
    if len(candidates) > 1:
        raise ChecksumError("checksum file lists %d files; which one is meant?"
                            % len(candidates))
    return candidates[0][0]


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check(path, expected, url):
    actual = sha256_of(path)
    if actual != expected.lower():
        raise ChecksumError("%s: published sha256 %s, downloaded file has sha256 %s"
                            % (url, expected, actual))
    return actual


# ---------------------------------------------------------------------------------------------
# fetching

class Fetcher:
    """HTTP(S) downloads (urllib; honours the usual proxy variables)."""

    def read_text(self, url):
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read().decode()

    def download(self, url, dest):
        tmp = dest + ".part"
        with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
        os.replace(tmp, dest)


def fetch_verified(fetcher, url, checksum_url, dest):
    """Download ``url`` to ``dest`` unless a verified copy is there; check the published sha256
    from ``checksum_url``. A file that does not match is deleted."""
    expected = parse_checksum(fetcher.read_text(checksum_url), os.path.basename(url))
    if os.path.exists(dest):
        if sha256_of(dest) == expected:
            return dest
        os.remove(dest)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    fetcher.download(url, dest)
    try:
        check(dest, expected, url)
    except ChecksumError:
        os.remove(dest)
        raise
    return dest


def extract_members(archive, names, dest_dir):
    """Extract the regular files called ``names`` (wherever they sit in the archive) flat into
    dest_dir; returns {name: path}. Every name must be found."""
    found = {}
    os.makedirs(dest_dir, exist_ok=True)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            base = os.path.basename(member.name)
            if member.isfile() and base in names and base not in found:
                path = os.path.join(dest_dir, base)
                src = tar.extractfile(member)
                if src is None:  # not reached: a regular file has its content
                    continue
                with src, open(path, "wb") as out:
                    shutil.copyfileobj(src, out)
                os.chmod(path, 0o755)
                found[base] = path
    missing = sorted(set(names) - set(found))
    if missing:
        raise DownloadError("%s has no %s" % (archive, ", ".join(missing)))
    return found


def regular_files(archive):
    with tarfile.open(archive) as tar:
        return sorted(os.path.basename(m.name) for m in tar.getmembers() if m.isfile())


# ---------------------------------------------------------------------------------------------
# images

def kubesphere_monitoring_refs():
    """{name: reference} of KubeSphere 3.4.1's monitoring images, at the tags it pins."""
    refs = {}
    for name, (component, repository) in versions.KUBESPHERE_MONITORING_IMAGES.items():
        refs[name] = "%s:%s" % (repository, versions.KUBESPHERE_MONITORING[component]["kubesphere"])
    return refs


def image_tool(which=shutil.which):
    if which("skopeo"):
        return "skopeo"
    if which("ctr"):
        return "ctr"
    raise DownloadError("saving images needs skopeo (preferred) or ctr with a running "
                        "containerd; install one of them (docs/bundle.md)")


def save_image_commands(tool, ref, dest, arch="amd64"):
    """The commands that save ``ref`` as an archive ``dest`` that ctr can import."""
    if tool == "skopeo":
        return [["skopeo", "copy", "--override-os", "linux", "--override-arch", arch,
                 "docker://" + ref, "docker-archive:%s:%s" % (dest, ref)]]
    if tool == "ctr":
        namespace = "slipway-bundle"
        return [["ctr", "-n", namespace, "images", "pull", "--platform", "linux/" + arch, ref],
                ["ctr", "-n", namespace, "images", "export", "--platform", "linux/" + arch,
                 dest, ref]]
    raise DownloadError("unknown image tool %r" % tool)


class DownloadBackend:
    name = "download"

    def __init__(self, kubernetes_version, cache_dir, out, fetcher=None, run=subprocess.run,
                 tool=None):
        self.kubernetes_version = versions.normalize_kubernetes_version(kubernetes_version)
        self.companions = versions.companions(self.kubernetes_version)
        self.cache_dir = os.path.join(cache_dir, "download")
        self.fetcher = fetcher or Fetcher()
        self.run = run
        self.tool = tool
        self.steps = steps.Steps(cache_dir, out)

    def inputs(self):
        return {"kubernetes": self.kubernetes_version, "companions": self.companions,
                "busybox": BUSYBOX_TAG}

    def _path(self, *parts):
        return os.path.join(self.cache_dir, *parts)

    def _save_image(self, name, ref):
        """The archive of ``ref`` in the download cache, saved unless it is there already."""
        tool = self.tool or image_tool()
        dest = self._path("images", "%s.tar" % name)
        key = steps.digest({"ref": ref, "tool": tool})
        stamp = dest + ".ref"
        if not (os.path.exists(dest) and os.path.exists(stamp)
                and open(stamp, encoding="utf-8").read() == key):
            self.steps.say("save image %s (%s)" % (ref, tool))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if os.path.exists(dest):
                os.remove(dest)
            for cmd in save_image_commands(tool, ref, dest):
                proc = self.run(cmd, check=False)
                if proc.returncode != 0:
                    raise DownloadError("%s failed (exit %d)" % (" ".join(cmd), proc.returncode))
            with open(stamp, "w", encoding="utf-8") as handle:
                handle.write(key)
        return dest

    def kubesphere_monitoring(self):
        """KubeSphere's monitoring images as KubeSphere 3.4.1 pins them (the source backend builds
        the nearest versions the Go module proxy serves): the images to add to every release, and
        their components entries."""
        added: list = []
        components: dict = {}
        for name, ref in sorted(kubesphere_monitoring_refs().items()):
            component = versions.KUBESPHERE_COMPONENT_PREFIX + \
                versions.KUBESPHERE_MONITORING_IMAGES[name][0]
            added.append(("images/%s.tar" % name, self._save_image(name, ref), name, ref,
                          component))
            components.setdefault(component, {
                "version": versions.KUBESPHERE_MONITORING[
                    versions.KUBESPHERE_MONITORING_IMAGES[name][0]]["kubesphere"],
                "source": ref})
        return added, components

    def runtime(self):
        """containerd, its shim, ctr and runc from their releases, for every release of the
        bundle: the binaries and their components entries."""
        urls = runtime_urls()
        fetched = {}
        for component, (url, sum_url) in urls.items():
            self.steps.say("download %s" % url)
            fetched[component] = fetch_verified(self.fetcher, url, sum_url,
                                                self._path(component, os.path.basename(url)))
        os.chmod(fetched["runc"], 0o755)
        programs = extract_members(fetched["containerd"],
                                   ["containerd", "containerd-shim-runc-v2", "ctr"],
                                   self._path("containerd", "bin", versions.CONTAINERD["version"]))
        files = [("bin/" + name, programs[name], "containerd")
                 for name in ("containerd", "containerd-shim-runc-v2", "ctr")]
        files.append(("bin/runc", fetched["runc"], "runc"))
        return files, {
            "containerd": {"version": versions.CONTAINERD["version"],
                           "source": urls["containerd"][0]},
            "runc": {"version": versions.RUNC["version"], "source": urls["runc"][0]},
        }

    def build(self):
        version = self.kubernetes_version
        result = BackendResult(version, "download")
        bins = {}
        for name, (url, sum_url) in kubernetes_binary_urls(version).items():
            self.steps.say("download %s" % url)
            bins[name] = fetch_verified(self.fetcher, url, sum_url,
                                        self._path("kubernetes", version, name))
            os.chmod(bins[name], 0o755)
        refs = kubeadm.list_images(bins["kubeadm"], version, run=self.run)
        etcd_tag = kubeadm.tag(refs["etcd"])
        etcd_version = kubeadm.etcd_module_version(etcd_tag)
        archives = archive_urls(version, etcd_version)
        fetched = {}
        for component, (url, sum_url) in archives.items():
            self.steps.say("download %s" % url)
            fetched[component] = fetch_verified(self.fetcher, url, sum_url,
                                                self._path(component, os.path.basename(url)))

        for name in ("kubeadm", "kubelet", "kubectl"):
            result.add_binary("bin/" + name, bins[name], "kubernetes")
        crictl = extract_members(fetched["crictl"], ["crictl"], self._path("crictl", "bin"))
        result.add_binary("bin/crictl", crictl["crictl"], "crictl")
        etcd = extract_members(fetched["etcd"], ["etcd", "etcdctl", "etcdutl"],
                               self._path("etcd", "bin", etcd_version))
        for name in ("etcd", "etcdctl", "etcdutl"):
            result.add_binary("bin/" + name, etcd[name], "etcd")
        plugin_names = regular_files(fetched["cni_plugins"])
        plugins = extract_members(fetched["cni_plugins"],
                                  [name for name in plugin_names if name not in (
                                      "LICENSE", "README.md")],
                                  self._path("cni_plugins", "bin", self.companions["cni_plugins"]))
        for name in sorted(plugins):
            result.add_binary("bin/cni/" + name, plugins[name], "cni_plugins")

        all_refs = image_refs(version, refs)
        for name in sorted(all_refs):
            dest = self._save_image(name, all_refs[name])
            result.add_image("images/%s.tar" % name, dest, name, all_refs[name],
                             IMAGE_COMPONENTS[name])

        comp = self.companions
        result.components = {
            "kubernetes": {"version": version,
                           "source": K8S_BINARY_URL.format(version=version, arch="amd64",
                                                           name="{kubeadm,kubelet,kubectl}")},
            "etcd": {"version": etcd_version, "image_tag": etcd_tag,
                     "source": archives["etcd"][0]},
            "coredns": {"version": kubeadm.coredns_module_version(kubeadm.tag(refs["coredns"])),
                        "image_tag": kubeadm.tag(refs["coredns"]), "source": refs["coredns"]},
            "pause": {"version": kubeadm.tag(refs["pause"]), "source": refs["pause"]},
            "crictl": {"version": comp["crictl"], "source": archives["crictl"][0]},
            "cni_plugins": {"version": comp["cni_plugins"], "source": archives["cni_plugins"][0]},
            "flannel": {"version": comp["flannel"], "source": all_refs["flannel"]},
            "flannel_cni_plugin": {"version": comp["flannel_cni_plugin"],
                                   "source": all_refs["flannel-cni-plugin"]},
            "metrics_server": {"version": comp["metrics_server"],
                               "source": all_refs["metrics-server"]},
            "busybox": {"version": BUSYBOX_TAG, "source": all_refs["busybox"]},
        }
        return result
