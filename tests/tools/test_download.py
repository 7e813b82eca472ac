import hashlib
import io
import os
import subprocess
import tarfile

import pytest

from bundler import cli, download, manifest, versions

V = "v1.37.1"
COMP = versions.companions(V)
LISTED = """registry.k8s.io/kube-apiserver:v1.37.1
registry.k8s.io/kube-controller-manager:v1.37.1
registry.k8s.io/kube-scheduler:v1.37.1
registry.k8s.io/kube-proxy:v1.37.1
registry.k8s.io/coredns/coredns:v1.14.6
registry.k8s.io/pause:3.10.2
registry.k8s.io/etcd:3.7.0-0
"""


def test_kubernetes_binary_urls():
    urls = download.kubernetes_binary_urls(V)
    assert urls["kubeadm"] == ("https://dl.k8s.io/release/v1.37.1/bin/linux/amd64/kubeadm",
                               "https://dl.k8s.io/release/v1.37.1/bin/linux/amd64/kubeadm.sha256")
    assert set(urls) == {"kubeadm", "kubelet", "kubectl"}


def test_archive_urls():
    urls = download.archive_urls(V, "v3.7.0")
    crictl = COMP["crictl"]
    assert urls["crictl"][0] == (
        "https://github.com/kubernetes-sigs/cri-tools/releases/download/%s/crictl-%s-linux-"
        "amd64.tar.gz" % (crictl, crictl))
    assert urls["crictl"][1] == urls["crictl"][0] + ".sha256"
    cni = COMP["cni_plugins"]
    assert urls["cni_plugins"][0] == (
        "https://github.com/containernetworking/plugins/releases/download/%s/cni-plugins-linux-"
        "amd64-%s.tgz" % (cni, cni))
    assert urls["etcd"] == (
        "https://github.com/etcd-io/etcd/releases/download/v3.7.0/etcd-v3.7.0-linux-amd64.tar.gz",
        "https://github.com/etcd-io/etcd/releases/download/v3.7.0/SHA256SUMS")


def test_image_refs_are_kubeadms_plus_addons():
    refs = download.image_refs(V, {"pause": "registry.k8s.io/pause:3.10.2"})
    assert refs == {
        "pause": "registry.k8s.io/pause:3.10.2",
        "flannel": "ghcr.io/flannel-io/flannel:%s" % COMP["flannel"],
        "flannel-cni-plugin": "ghcr.io/flannel-io/flannel-cni-plugin:%s"
                              % COMP["flannel_cni_plugin"],
        "metrics-server": "registry.k8s.io/metrics-server/metrics-server:%s"
                          % COMP["metrics_server"],
        "busybox": "docker.io/library/busybox:1.35.0",
    }


HASH_A = "a" * 64
HASH_B = "b" * 64


@pytest.mark.parametrize("text, name, expected", [
    (HASH_A, "kubeadm", HASH_A),                                      # dl.k8s.io: bare hash
    (HASH_A + "\n", None, HASH_A),
    ("%s  crictl.tar.gz\n" % HASH_A, "crictl.tar.gz", HASH_A),       # sha256sum line
    ("%s *etcd.tgz\n%s  other.tgz\n" % (HASH_B, HASH_A), "etcd.tgz", HASH_B),   # SHA256SUMS
    ("%s  ./dir/cni.tgz\n" % HASH_A.upper(), "cni.tgz", HASH_A),
])
def test_parse_checksum(text, name, expected):
    assert download.parse_checksum(text, name) == expected


@pytest.mark.parametrize("text, name", [
    ("", "x"), ("not-a-hash  x\n", "x"), ("%s  other\n" % HASH_A, "x"),
    ("%s  a\n%s  b\n" % (HASH_A, HASH_B), "c"), ("%s\n%s\n" % (HASH_A, HASH_B), None)])
def test_parse_checksum_rejects(text, name):
    with pytest.raises(download.ChecksumError):
        download.parse_checksum(text, name)


def tgz(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class FakeFetcher:
    """Serves release files and their published checksums from memory."""

    def __init__(self, corrupt=()):
        self.files = {}
        self.sums = {}
        self.downloads = []
        self.corrupt = set(corrupt)
        for name, (url, sum_url) in download.kubernetes_binary_urls(V).items():
            self.add(url, sum_url, b"binary " + name.encode(), bare=True)
        urls = download.archive_urls(V, "v3.7.0")
        self.add(*urls["crictl"], tgz({"crictl": b"crictl"}))
        self.add(*urls["cni_plugins"], tgz({"./bridge": b"bridge", "./host-local": b"hl",
                                            "./loopback": b"lo", "./portmap": b"pm",
                                            "./LICENSE": b"license"}))
        etcd = tgz({"etcd-v3.7.0-linux-amd64/etcd": b"etcd",
                    "etcd-v3.7.0-linux-amd64/etcdctl": b"etcdctl",
                    "etcd-v3.7.0-linux-amd64/etcdutl": b"etcdutl",
                    "etcd-v3.7.0-linux-amd64/README.md": b"readme"})
        self.files[urls["etcd"][0]] = etcd
        self.sums[urls["etcd"][1]] = "%s  other.tar.gz\n%s  %s\n" % (
            HASH_A, hashlib.sha256(etcd).hexdigest(), os.path.basename(urls["etcd"][0]))

    def add(self, url, sum_url, data, bare=False):
        self.files[url] = data
        digest = hashlib.sha256(data).hexdigest()
        self.sums[sum_url] = digest if bare else "%s  %s\n" % (digest, os.path.basename(url))

    def read_text(self, url):
        return self.sums[url]

    def download(self, url, dest):
        self.downloads.append(url)
        data = self.files[url]
        if url in self.corrupt:
            data = data + b"tampered"
        with open(dest, "wb") as handle:
            handle.write(data)


def fake_run(calls):
    def run(cmd, **kwargs):
        calls.append(cmd)
        if cmd[1:4] == ["config", "images", "list"]:
            return subprocess.CompletedProcess(cmd, 0, stdout=LISTED, stderr="")
        if cmd[0] == "skopeo":
            dest = cmd[-1].split(":")[1]
            with open(dest, "wb") as handle:
                handle.write(("archive of " + cmd[-2]).encode())
            return subprocess.CompletedProcess(cmd, 0)
        raise AssertionError("unexpected command %s" % cmd)
    return run


def make_backend(tmp_path, fetcher, calls):
    return download.DownloadBackend(V, str(tmp_path / "cache"), io.StringIO(), fetcher=fetcher,
                                    run=fake_run(calls), tool="skopeo")


def test_download_backend_builds_a_verified_bundle(tmp_path, monkeypatch):
    calls = []
    fetcher = FakeFetcher()
    backend = make_backend(tmp_path, fetcher, calls)
    result = backend.build()
    out = str(tmp_path / "bundle")
    data = cli.assemble(out, result)
    assert manifest.verify(out) == []
    paths = [entry["path"] for entry in data["binaries"]]
    assert paths == sorted(["bin/kubeadm", "bin/kubelet", "bin/kubectl", "bin/crictl",
                            "bin/etcd", "bin/etcdctl", "bin/etcdutl", "bin/cni/bridge",
                            "bin/cni/host-local", "bin/cni/loopback", "bin/cni/portmap"])
    refs = {entry["name"]: entry["ref"] for entry in data["images"]}
    assert refs["etcd"] == "registry.k8s.io/etcd:3.7.0-0"
    assert refs["kube-proxy"] == "registry.k8s.io/kube-proxy:v1.37.1"
    assert refs["busybox"] == "docker.io/library/busybox:1.35.0"
    assert len(refs) == 11
    skopeo = [cmd for cmd in calls if cmd[0] == "skopeo"]
    assert ["skopeo", "copy", "--override-os", "linux", "--override-arch", "amd64",
            "docker://registry.k8s.io/pause:3.10.2",
            "docker-archive:%s:registry.k8s.io/pause:3.10.2"
            % (tmp_path / "cache" / "download" / "images" / "pause.tar")] in skopeo
    assert data["components"]["etcd"] == {
        "version": "v3.7.0", "image_tag": "3.7.0-0",
        "source": download.archive_urls(V, "v3.7.0")["etcd"][0]}
    assert data["backend"] == "download"

    # A second run downloads nothing and saves no image again.
    before = len(fetcher.downloads)
    calls.clear()
    make_backend(tmp_path, fetcher, calls).build()
    assert len(fetcher.downloads) == before
    assert not [cmd for cmd in calls if cmd[0] == "skopeo"]


def test_checksum_mismatch_stops_and_removes_the_file(tmp_path):
    url = download.kubernetes_binary_urls(V)["kubelet"][0]
    backend = make_backend(tmp_path, FakeFetcher(corrupt=[url]), [])
    with pytest.raises(download.ChecksumError) as err:
        backend.build()
    message = str(err.value)
    assert url in message
    assert hashlib.sha256(b"binary kubelet").hexdigest() in message
    assert hashlib.sha256(b"binary kubelettampered").hexdigest() in message
    assert not os.path.exists(str(tmp_path / "cache" / "download" / "kubernetes" / V / "kubelet"))


def test_a_cached_file_that_no_longer_matches_is_fetched_again(tmp_path):
    fetcher = FakeFetcher()
    url, sum_url = download.kubernetes_binary_urls(V)["kubeadm"]
    dest = str(tmp_path / "kubeadm")
    with open(dest, "wb") as handle:
        handle.write(b"stale")
    download.fetch_verified(fetcher, url, sum_url, dest)
    assert fetcher.downloads == [url]
    assert open(dest, "rb").read() == b"binary kubeadm"


def test_image_tool_choice():
    assert download.image_tool(lambda name: "/usr/bin/" + name) == "skopeo"
    assert download.image_tool(lambda name: "/usr/bin/ctr" if name == "ctr" else None) == "ctr"
    with pytest.raises(download.DownloadError, match="skopeo"):
        download.image_tool(lambda name: None)


def test_ctr_commands_pull_and_export_one_platform():
    cmds = download.save_image_commands("ctr", "registry.k8s.io/pause:3.10.2", "/tmp/p.tar")
    assert cmds == [
        ["ctr", "-n", "slipway-bundle", "images", "pull", "--platform", "linux/amd64",
         "registry.k8s.io/pause:3.10.2"],
        ["ctr", "-n", "slipway-bundle", "images", "export", "--platform", "linux/amd64",
         "/tmp/p.tar", "registry.k8s.io/pause:3.10.2"]]


def test_kubesphere_monitoring_saves_the_images_kubesphere_pins(tmp_path):
    calls = []
    backend = make_backend(tmp_path, FakeFetcher(), calls)
    added, components = backend.kubesphere_monitoring()
    refs = {name: ref for _path, _archive, name, ref, _component in added}
    assert refs["prometheus-operator"] == "docker.io/kubesphere/prometheus-operator:v0.55.1"
    assert refs["prometheus"] == "docker.io/prom/prometheus:v2.39.1"
    assert len(refs) == 8
    assert components["kubesphere_prometheus_operator"]["version"] == "v0.55.1"
    assert all(component.startswith("kubesphere_") for _p, _a, _n, _r, component in added)
    assert len([cmd for cmd in calls if cmd[0] == "skopeo"]) == 8
    calls.clear()
    backend.kubesphere_monitoring()
    assert not calls


def test_runtime_urls():
    urls = download.runtime_urls()
    assert urls["containerd"] == (
        "https://github.com/containerd/containerd/releases/download/v2.3.7/containerd-2.3.7-linux-amd64.tar.gz",
        "https://github.com/containerd/containerd/releases/download/v2.3.7/containerd-2.3.7-linux-amd64.tar.gz"
        ".sha256sum")
    assert urls["runc"] == ("https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.amd64",
                            "https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.sha256sum")


def test_runtime_from_the_releases_checksums_verified(tmp_path):
    fetcher = FakeFetcher()
    urls = download.runtime_urls()
    fetcher.add(*urls["containerd"], tgz({"bin/containerd": b"containerd", "bin/ctr": b"ctr",
                                          "bin/containerd-shim-runc-v2": b"shim",
                                          "bin/containerd-stress": b"stress"}))
    runc = b"runc binary"
    fetcher.files[urls["runc"][0]] = runc
    # runc.sha256sum lists every architecture's binary
    fetcher.sums[urls["runc"][1]] = "%s  runc.arm64\n%s  runc.amd64\n" % (HASH_A, hashlib.sha256(runc).hexdigest())
    backend = make_backend(tmp_path, fetcher, [])
    files, components = backend.runtime()
    assert [(path, component) for path, _src, component in files] == [
        ("bin/containerd", "containerd"), ("bin/containerd-shim-runc-v2", "containerd"),
        ("bin/ctr", "containerd"), ("bin/runc", "runc")]
    contents = {path: open(src, "rb").read() for path, src, _component in files}
    assert contents["bin/runc"] == runc and contents["bin/ctr"] == b"ctr"
    assert all(os.access(src, os.X_OK) for _path, src, _component in files)
    assert components == {"containerd": {"version": "v2.3.7", "source": urls["containerd"][0]},
                          "runc": {"version": "v1.5.3", "source": urls["runc"][0]}}
    # a runc that does not match its published checksum stops the build
    tampered = FakeFetcher(corrupt=[urls["runc"][0]])
    tampered.files.update(fetcher.files)
    tampered.sums.update(fetcher.sums)
    with pytest.raises(download.ChecksumError, match="runc.amd64"):
        make_backend(tmp_path / "other", tampered, []).runtime()
