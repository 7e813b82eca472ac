import subprocess

import pytest

from bundler import kubeadm

LISTED = """registry.k8s.io/kube-apiserver:v1.37.1
registry.k8s.io/kube-controller-manager:v1.37.1
registry.k8s.io/kube-scheduler:v1.37.1
registry.k8s.io/kube-proxy:v1.37.1
registry.k8s.io/coredns/coredns:v1.14.6
registry.k8s.io/pause:3.10.2
registry.k8s.io/etcd:3.7.0-0
"""

CONSTANTS = """
    // DefaultEtcdVersion indicates the default etcd version that kubeadm uses
    DefaultEtcdVersion = "3.7.0-0"
    CoreDNSVersion = "v1.14.6"
    PauseVersion = "3.10.2"
    SupportedEtcdVersion = map[uint8]string{
        34: "3.6.5-0",
        35: "3.6.9-0",
        36: "3.7.0-0",
    }
"""


def test_parse_images_list():
    refs = kubeadm.parse_images_list("W1122 some warning line\n" + LISTED)
    assert list(refs) == list(kubeadm.KUBEADM_IMAGES)
    assert refs["coredns"] == "registry.k8s.io/coredns/coredns:v1.14.6"
    assert refs["etcd"] == "registry.k8s.io/etcd:3.7.0-0"


def test_missing_image_is_an_error():
    with pytest.raises(kubeadm.KubeadmError, match="etcd"):
        kubeadm.parse_images_list(LISTED.replace("registry.k8s.io/etcd:3.7.0-0\n", ""))


def test_list_images_runs_kubeadm_with_the_version():
    seen = []

    def run(cmd, **kwargs):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, stdout=LISTED, stderr="")

    refs = kubeadm.list_images("/b/kubeadm", "v1.37.1", run=run)
    assert seen == [["/b/kubeadm", "config", "images", "list", "--kubernetes-version",
                     "v1.37.1"]]
    assert refs["pause"] == "registry.k8s.io/pause:3.10.2"


@pytest.mark.parametrize("tag, version", [("3.7.0-0", "v3.7.0"), ("3.5.24-0", "v3.5.24"),
                                          ("3.6.5", "v3.6.5")])
def test_etcd_module_version(tag, version):
    assert kubeadm.etcd_module_version(tag) == version


def test_coredns_module_version():
    assert kubeadm.coredns_module_version("v1.14.6") == "v1.14.6"
    with pytest.raises(kubeadm.KubeadmError):
        kubeadm.coredns_module_version("latest")


@pytest.mark.parametrize("minor, etcd", [(35, "3.6.9-0"), (37, "3.7.0-0"), (30, "3.6.5-0")])
def test_constants_follow_kubeadms_etcd_table(minor, etcd):
    tags = kubeadm.constants_tags(CONSTANTS, minor)
    assert tags == {"etcd": etcd, "coredns": "v1.14.6", "pause": "3.10.2"}
