# Unit tests of the artifact list: bundle checks name the file and both checksums; release URLs are exact.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._artifacts import from_bundle, from_release, image_refs
from ansible_collections.slipway.cluster.plugins.module_utils._model import ModelError, build_model

MANIFEST = {
    "format_version": 1,
    "kubernetes_version": "v1.37.1",
    "arch": "amd64",
    "binaries": [
        {"path": "bin/kubeadm", "component": "kubernetes", "sha256": "a" * 64, "size": 1},
        {"path": "bin/kubelet", "component": "kubernetes", "sha256": "b" * 64, "size": 1},
        {"path": "bin/etcd", "component": "etcd", "sha256": "c" * 64, "size": 1},
        {"path": "bin/cni/bridge", "component": "cni_plugins", "sha256": "d" * 64, "size": 1},
    ],
    "images": [
        {"path": "images/pause.tar", "name": "pause", "ref": "registry.k8s.io/pause:3.10.2", "sha256": "e" * 64, "size": 1},
        {"path": "images/kube-apiserver.tar", "name": "kube-apiserver", "ref": "registry.k8s.io/kube-apiserver:v1.37.1",
         "sha256": "f" * 64, "size": 1},
    ],
}
SUMS = {f"/b/{e['path']}": e["sha256"] for e in MANIFEST["binaries"] + MANIFEST["images"]}


class FakeBundle:
    def __init__(self, manifest=None, sums=None):
        self._manifest = MANIFEST if manifest is None else manifest
        self.sums = dict(SUMS if sums is None else sums)

    def manifest(self, bundle_dir):
        return self._manifest

    def checksum(self, path):
        return self.sums.get(path)


def test_a_good_bundle_lists_binaries_and_images():
    artifacts, problems = from_bundle(MANIFEST, "/b", "1.37.1", FakeBundle().checksum)
    assert problems == []
    by_name = {b["name"]: b for b in artifacts["binaries"]}
    assert by_name["kubeadm"] == {"name": "kubeadm", "dest": "/usr/local/bin/kubeadm", "group": "kubernetes",
                                  "src": "/b/bin/kubeadm", "sha256": "a" * 64}
    assert by_name["etcd"]["group"] == "etcd"
    assert by_name["bridge"]["dest"] == "/opt/cni/bin/bridge"
    assert artifacts["images"]["pause"] == {"ref": "registry.k8s.io/pause:3.10.2", "src": "/b/images/pause.tar",
                                            "sha256": "e" * 64, "control_plane_only": False, "kubesphere_only": False}
    assert artifacts["images"]["kube-apiserver"]["control_plane_only"] is True
    assert image_refs(artifacts)["pause"] == "registry.k8s.io/pause:3.10.2"


def test_the_conformance_suite_of_a_bundle_is_neither_hashed_nor_imported():
    """build.py --with conformance lists e2e.test and the suite's images apart (docs/bundle.md): a cluster built from
    that bundle reads, hashes and imports exactly what it does from one without."""
    suite = {"binaries": [{"path": "conformance/bin/e2e.test", "component": "conformance", "sha256": "1" * 64,
                           "size": 1}],
             "images": [{"path": "conformance/images/agnhost-2.66.1.tar", "name": "agnhost-2.66.1",
                         "ref": "registry.k8s.io/e2e-test-images/agnhost:2.66.1", "component": "conformance",
                         "sha256": "2" * 64, "size": 1}]}
    read = []

    def checksum(path):
        read.append(path)
        return SUMS.get(path)

    artifacts, problems = from_bundle({**MANIFEST, "conformance": suite}, "/b", "1.37.1", checksum)
    assert problems == []
    assert sorted(read) == sorted(SUMS)
    assert artifacts == from_bundle(MANIFEST, "/b", "1.37.1", FakeBundle().checksum)[0]


def test_images_of_kubesphere_components_are_kubesphere_only():
    """The bundle's kubesphere_* components (KubeSphere's monitoring): the artifacts role imports them only on
    clusters with KubeSphere."""
    images = [{"path": "images/prometheus.tar", "name": "prometheus", "ref": "docker.io/prom/prometheus:v2.39.1",
               "component": "kubesphere_prometheus", "sha256": "1" * 64, "size": 1},
              {"path": "images/pause.tar", "name": "pause", "ref": "registry.k8s.io/pause:3.10.2", "component": "pause",
               "sha256": "e" * 64, "size": 1},
              {"path": "images/slipway-operator.tar", "name": "slipway-operator", "ref": "localhost/slipway/operator:0.1.0",
               "component": "slipway_operator", "sha256": "2" * 64, "size": 1}]
    manifest = {**MANIFEST, "images": images}
    sums = {f"/b/{e['path']}": e["sha256"] for e in manifest["binaries"] + images}
    artifacts, problems = from_bundle(manifest, "/b", "1.37.1", FakeBundle(manifest, sums).checksum)
    assert problems == []
    assert {name: image["kubesphere_only"] for name, image in artifacts["images"].items()} == {
        "prometheus": True, "pause": False, "slipway-operator": False}
    # The kubesphere role and slipway-operator run them by their kubesphere_images key.
    assert artifacts["kubesphere_images"] == {"prometheus": "docker.io/prom/prometheus:v2.39.1"}
    released = from_release("1.37.1", "upstream")[0]
    assert not any(image["kubesphere_only"] for image in released["images"].values())
    assert "kubesphere_images" not in released


def test_checksum_mismatch_names_the_file_and_both_checksums():
    sums = {**SUMS, "/b/images/pause.tar": "0" * 64}
    problems = from_bundle(MANIFEST, "/b", "1.37.1", FakeBundle(sums=sums).checksum)[1]
    assert [str(p) for p in problems] == [
        f"bundle file images/pause.tar: manifest.yml says sha256 {'e' * 64}, the file has sha256 {'0' * 64}; "
        "copy or build the bundle again"]


def test_missing_file_is_named():
    sums = {k: v for k, v in SUMS.items() if not k.endswith("kubelet")}
    problems = from_bundle(MANIFEST, "/b", "1.37.1", FakeBundle(sums=sums).checksum)[1]
    assert [str(p) for p in problems] == [
        "bundle file bin/kubelet: is listed in manifest.yml but missing from /b; copy the whole bundle again"]


def test_version_mismatch():
    problems = from_bundle(MANIFEST, "/b", "1.36.4", FakeBundle().checksum)[1]
    assert [str(p) for p in problems] == [
        "slipway_kubernetes_version: is 1.36.4 but the bundle at /b holds Kubernetes 1.37.1; "
        "set slipway_kubernetes_version to one of them or build a bundle for 1.36.4"]


OLDER = {
    "kubernetes_version": "v1.36.5",
    "components": {},
    "binaries": [{"path": "releases/v1.36.5/bin/kubeadm", "component": "kubernetes", "sha256": "1" * 64, "size": 1}],
    "images": [{"path": "releases/v1.36.5/images/pause.tar", "name": "pause", "ref": "registry.k8s.io/pause:3.10.1",
                "sha256": "2" * 64, "size": 1}],
}
TWO = {**MANIFEST, "releases": [OLDER]}
TWO_SUMS = {**SUMS, "/b/releases/v1.36.5/bin/kubeadm": "1" * 64, "/b/releases/v1.36.5/images/pause.tar": "2" * 64}


def test_a_second_release_of_the_bundle_is_picked_by_version():
    older, problems = from_bundle(TWO, "/b", "1.36.5", FakeBundle(sums=TWO_SUMS).checksum)
    assert problems == []
    assert [(b["name"], b["src"]) for b in older["binaries"]] == [("kubeadm", "/b/releases/v1.36.5/bin/kubeadm")]
    assert older["images"]["pause"]["ref"] == "registry.k8s.io/pause:3.10.1"
    current = from_bundle(TWO, "/b", "1.37.1", FakeBundle(sums=TWO_SUMS).checksum)[0]
    assert current["images"]["pause"]["ref"] == "registry.k8s.io/pause:3.10.2"


def test_a_second_release_is_checked_file_by_file_and_named_when_missing():
    sums = {**TWO_SUMS, "/b/releases/v1.36.5/images/pause.tar": "0" * 64}
    problems = from_bundle(TWO, "/b", "1.36.5", FakeBundle(sums=sums).checksum)[1]
    assert [str(p) for p in problems] == [
        f"bundle file releases/v1.36.5/images/pause.tar: manifest.yml says sha256 {'2' * 64}, the file has sha256 "
        f"{'0' * 64}; copy or build the bundle again"]
    problems = from_bundle(TWO, "/b", "1.36.4", FakeBundle(sums=TWO_SUMS).checksum)[1]
    assert str(problems[0]) == (
        "slipway_kubernetes_version: is 1.36.4 but the bundle at /b holds Kubernetes 1.37.1 and 1.36.5; "
        "set slipway_kubernetes_version to one of them or build a bundle for 1.36.4")


@pytest.mark.parametrize("manifest,expected", [
    (None, "/b has no manifest.yml"),
    ({**MANIFEST, "format_version": 2}, "has format_version 2; this collection reads format 1"),
])
def test_unreadable_bundles(manifest, expected):
    problems = from_bundle(manifest, "/b", "1.37.1", FakeBundle().checksum)[1]
    assert len(problems) == 1 and expected in str(problems[0])


def _file(entry, arch="amd64"):
    return entry["files"][arch]


def test_upstream_urls_per_architecture():
    artifacts, problems = from_release("1.37.1", "upstream")
    assert problems == []
    kubeadm = next(b for b in artifacts["binaries"] if b["name"] == "kubeadm")
    assert (kubeadm["file"], kubeadm["version"]) == ("kubeadm", "v1.37.1")
    assert _file(kubeadm)["url"] == "https://dl.k8s.io/release/v1.37.1/bin/linux/amd64/kubeadm"
    assert _file(kubeadm, "arm64")["url"] == "https://dl.k8s.io/release/v1.37.1/bin/linux/arm64/kubeadm"
    assert _file(artifacts["archives"]["crictl"])["url"] == (
        "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.37.0/crictl-v1.37.0-linux-amd64.tar.gz")
    assert _file(artifacts["archives"]["cni_plugins"], "arm64")["url"] == (
        "https://github.com/containernetworking/plugins/releases/download/v1.9.1/cni-plugins-linux-arm64-v1.9.1.tgz")
    assert image_refs(artifacts)["flannel"] == "ghcr.io/flannel-io/flannel:v0.28.10"


def test_the_sha256_of_each_file_is_the_pinned_one_never_a_checksum_url():
    """The sums come from the collection's table for the file, its version and the architecture."""
    table = {"kubeadm": {"v1.36.3": {"amd64": "a" * 64, "arm64": "b" * 64}}, "etcd": {"v3.6.8": {"arm64": "c" * 64}}}
    artifacts = from_release("1.36.3", "upstream", table=table)[0]
    kubeadm = next(b for b in artifacts["binaries"] if b["name"] == "kubeadm")
    assert {arch: f["sha256"] for arch, f in kubeadm["files"].items()} == {"amd64": "a" * 64, "arm64": "b" * 64}
    assert {arch: f["sha256"] for arch, f in artifacts["archives"]["etcd"]["files"].items()} == {
        "amd64": None, "arm64": "c" * 64}
    assert "checksum" not in kubeadm and not any(".sha256" in str(entry) for entry in artifacts["binaries"])


def test_mirror_uses_kubespray_files_repo_layout():
    artifacts, problems = from_release("1.36.3", "mirror", mirror_url="https://files.example.com/")
    assert problems == []
    kubelet = next(b for b in artifacts["binaries"] if b["name"] == "kubelet")
    assert _file(kubelet, "arm64")["url"] == "https://files.example.com/dl.k8s.io/release/v1.36.3/bin/linux/arm64/kubelet"
    assert _file(artifacts["archives"]["crictl"])["url"].startswith(
        "https://files.example.com/github.com/kubernetes-sigs/cri-tools/releases/download/v1.36.0/")


def test_upstream_etcd_is_kubeadms_release():
    artifacts = from_release("1.37.1", "upstream")[0]
    etcd = artifacts["archives"]["etcd"]
    assert _file(etcd)["url"] == "https://github.com/etcd-io/etcd/releases/download/v3.7.0/etcd-v3.7.0-linux-amd64.tar.gz"
    assert etcd["group"] == "etcd"
    assert _file(etcd, "arm64")["members"] == ["etcd-v3.7.0-linux-arm64/etcd", "etcd-v3.7.0-linux-arm64/etcdctl",
                                               "etcd-v3.7.0-linux-arm64/etcdutl"]
    assert {name: a["group"] for name, a in artifacts["archives"].items() if name != "etcd"} == {
        "crictl": "kubernetes", "cni_plugins": "kubernetes", "containerd": "runtime"}


def test_upstream_runtime_is_containerds_and_runcs_release_files():
    artifacts = from_release("1.37.1", "upstream")[0]
    containerd = artifacts["archives"]["containerd"]
    assert (containerd["file"], containerd["version"], containerd["group"]) == ("containerd", "v2.3.7", "runtime")
    assert _file(containerd) == {
        "url": "https://github.com/containerd/containerd/releases/download/v2.3.7/containerd-2.3.7-linux-amd64.tar.gz",
        "sha256": None, "pinned_by": None, "members": ["bin/containerd", "bin/containerd-shim-runc-v2", "bin/ctr"]}
    runc = next(b for b in artifacts["binaries"] if b["name"] == "runc")
    assert (runc["dest"], runc["group"], _file(runc, "arm64")["url"]) == (
        "/usr/local/sbin/runc", "runtime", "https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.arm64")
    mirrored = from_release("1.36.3", "mirror", mirror_url="https://files.example.com")[0]
    assert _file(mirrored["archives"]["containerd"], "arm64")["url"] == (
        "https://files.example.com/github.com/containerd/containerd/releases/download/v2.3.7/"
        "containerd-2.3.7-linux-arm64.tar.gz")


def test_mirror_etcd_comes_from_the_mirror():
    etcd = from_release("1.36.3", "mirror", mirror_url="https://files.example.com")[0]["archives"]["etcd"]
    assert _file(etcd, "arm64")["url"] == ("https://files.example.com/github.com/etcd-io/etcd/releases/download/v3.6.8/"
                                           "etcd-v3.6.8-linux-arm64.tar.gz")


@pytest.mark.parametrize("version", ["1.37.99", "1.36.6", "1.37.3"])
def test_an_upstream_patch_that_was_not_released_is_refused_before_any_contact(version):
    problems = from_release(version, "upstream")[1]
    assert [p.where for p in problems] == ["slipway_kubernetes_version"]
    assert str(problems[0]).startswith(f"slipway_kubernetes_version: {version} is not a Kubernetes release this collection "
                                       f"knows of ({version.rsplit('.', 1)[0]}.0 to ")
    assert "KUBERNETES_RELEASES in plugins/module_utils/_artifacts.py" in str(problems[0])


@pytest.mark.parametrize("version", ["1.36.0", "1.36.5", "1.37.0", "1.37.2"])
def test_every_known_patch_is_accepted(version):
    assert from_release(version, "upstream")[1] == []


def test_the_releases_table_covers_every_supported_minor():
    from ansible_collections.slipway.cluster.plugins.module_utils._artifacts import COMPANIONS, KUBERNETES_RELEASES
    from ansible_collections.slipway.cluster.plugins.module_utils._model import DEFAULT_SETTINGS, SUPPORTED_KUBERNETES_MINORS

    assert set(KUBERNETES_RELEASES) == set(SUPPORTED_KUBERNETES_MINORS) == set(COMPANIONS)
    assert from_release(DEFAULT_SETTINGS["slipway_kubernetes_version"], "upstream")[1] == []


class Mirror:
    """The controller's view of a mirror: the URLs it has, or no answer at all."""

    def __init__(self, urls=(), reachable=True):
        self.urls, self.reachable, self.asked = set(urls), reachable, []

    def __call__(self, url):
        self.asked.append(url)
        return (url in self.urls) if self.reachable else None


SHA = "https://files.example.com/dl.k8s.io/release/v{}/bin/linux/amd64/kubeadm"


def test_a_mirror_is_asked_for_the_kubeadm_of_the_release():
    mirror = Mirror([SHA.format("1.37.1")])
    assert from_release("1.37.1", "mirror", mirror_url="https://files.example.com/", url_exists=mirror)[1] == []
    assert mirror.asked == [SHA.format("1.37.1")]
    problems = from_release("1.37.99", "mirror", mirror_url="https://files.example.com", url_exists=mirror)[1]
    assert [str(p) for p in problems] == [
        f"slipway_kubernetes_version: 1.37.99 is not on the mirror slipway_artifacts_mirror_url: {SHA.format('1.37.99')} "
        "is not there; copy the release's files to the mirror (docs/bundle.md) or set a version it has"]


def test_a_mirror_may_have_a_patch_newer_than_the_table():
    mirror = Mirror([SHA.format("1.37.9")])
    assert from_release("1.37.9", "mirror", mirror_url="https://files.example.com", url_exists=mirror)[1] == []


def test_a_mirror_that_does_not_answer_the_controller_is_a_warning_for_an_unknown_patch_only():
    warnings = []
    mirror = Mirror(reachable=False)
    assert from_release("1.37.1", "mirror", mirror_url="https://files.example.com", url_exists=mirror,
                        warnings=warnings)[1] == []
    assert warnings == []
    assert from_release("1.37.99", "mirror", mirror_url="https://files.example.com", url_exists=mirror,
                        warnings=warnings)[1] == []
    assert [str(w) for w in warnings] == [
        "slipway_kubernetes_version: 1.37.99 could not be checked: the mirror https://files.example.com did not answer "
        "the controller, and the collection knows 1.37.0 to 1.37.2; the nodes will fail to download it if the mirror "
        "does not have it"]


def test_the_model_asks_the_mirror_through_its_reader_and_lists_the_problem_with_the_others():
    class Reader(FakeBundle):
        url_exists = Mirror([SHA.format("1.37.1")])

    with pytest.raises(ModelError) as err:
        build_model(GROUPS, HOSTVARS, {"slipway_artifacts_source": "mirror", "slipway_kubernetes_version": "1.37.4",
                                       "slipway_artifacts_mirror_url": "https://files.example.com", "slipway_cni": "weave"},
                    bundle=Reader())
    assert [p.where for p in err.value.problems] == ["slipway_cni", "slipway_kubernetes_version"]
    # A mirror URL that is none is not asked.
    Reader.url_exists = Mirror()
    with pytest.raises(ModelError):
        build_model(GROUPS, HOSTVARS, {"slipway_artifacts_source": "mirror", "slipway_artifacts_mirror_url": "files"},
                    bundle=Reader())
    assert Reader.url_exists.asked == []


def test_mirror_needs_its_url():
    problems = from_release("1.37.1", "mirror")[1]
    assert [p.where for p in problems] == ["slipway_artifacts_mirror_url"]


GROUPS = {"kube_control_plane": ["cp1"], "kube_node": ["w1"]}
HOSTVARS = {"cp1": {"ansible_host": "10.0.0.1"}, "w1": {"ansible_host": "10.0.0.2"}}


def test_bundle_problems_join_the_other_problems_of_the_model():
    sums = {**SUMS, "/b/bin/kubeadm": "1" * 64}
    with pytest.raises(ModelError) as err:
        build_model(GROUPS, HOSTVARS, {"slipway_artifacts_source": "bundle", "slipway_artifacts_bundle_dir": "/b",
                                       "slipway_cni": "weave"}, bundle=FakeBundle(sums=sums))
    wheres = [p.where for p in err.value.problems]
    assert wheres == ["slipway_cni", "bundle file bin/kubeadm"]


def test_bundle_source_needs_a_directory():
    with pytest.raises(ModelError) as err:
        build_model(GROUPS, HOSTVARS, {"slipway_artifacts_source": "bundle"}, bundle=FakeBundle())
    assert [str(p) for p in err.value.problems] == [
        "slipway_artifacts_bundle_dir: slipway_artifacts_source is bundle: set it to the bundle directory on the controller"]


def test_model_carries_the_artifacts():
    model = build_model(GROUPS, HOSTVARS, {"slipway_artifacts_source": "bundle", "slipway_artifacts_bundle_dir": "/b"},
                        bundle=FakeBundle())
    assert model["artifacts"]["source"] == "bundle"
    assert model["artifacts"]["images"]["pause"]["ref"] == "registry.k8s.io/pause:3.10.2"


def test_the_bundles_runtime_goes_to_every_kubernetes_node():
    runtime = [{"path": f"releases/v1.36.5/bin/{name}", "component": "runc" if name == "runc" else "containerd",
                "sha256": str(index) * 64, "size": 1}
               for index, name in enumerate(("containerd", "containerd-shim-runc-v2", "ctr", "runc"), start=1)]
    release = {"kubernetes_version": "v1.36.5", "binaries": runtime, "images": []}
    manifest = {**MANIFEST, "releases": [release]}
    sums = {f"/b/{e['path']}": e["sha256"] for e in runtime}
    artifacts, problems = from_bundle(manifest, "/b", "1.36.5", FakeBundle(manifest, sums).checksum)
    assert problems == []
    assert {b["name"]: (b["group"], b["dest"]) for b in artifacts["binaries"]} == {
        "containerd": ("runtime", "/usr/local/bin/containerd"),
        "containerd-shim-runc-v2": ("runtime", "/usr/local/bin/containerd-shim-runc-v2"),
        "ctr": ("runtime", "/usr/local/bin/ctr"),
        "runc": ("runtime", "/usr/local/sbin/runc")}


@pytest.mark.parametrize("settings, where, words", [
    ({"slipway_kubesphere_enabled": True}, "slipway_kubesphere_enabled", "no KubeSphere monitoring images"),
    ({"slipway_kubesphere_enabled": True, "slipway_operator_enabled": True}, "slipway_operator_enabled",
     "no slipway-operator image"),
])
def test_a_bundle_built_without_optional_images_refuses_a_cluster_that_runs_them(settings, where, words):
    """make lab builds the bundle --without kubesphere --without operator unless its cluster runs them."""
    with pytest.raises(ModelError) as err:
        build_model(GROUPS, HOSTVARS, {"slipway_artifacts_source": "bundle", "slipway_artifacts_bundle_dir": "/b",
                                       **settings}, bundle=FakeBundle())
    problem = next(p for p in err.value.problems if p.where == where)
    assert words in str(problem) and "--without" in str(problem) and "/b" in str(problem)
    # without them the same bundle is fine
    build_model(GROUPS, HOSTVARS, {"slipway_artifacts_source": "bundle", "slipway_artifacts_bundle_dir": "/b"},
                bundle=FakeBundle())
