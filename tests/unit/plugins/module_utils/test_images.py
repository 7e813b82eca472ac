# Unit tests of module_utils/_images.py: the images objects run, and those the nodes lack by their Nodes' status, as
# the kubelet reports it (every name of an image: its tags and its digest, fully qualified as containerd stores them).
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.filter.images import FilterModule
from ansible_collections.slipway.cluster.plugins.module_utils._images import (
    NODE_STATUS_MAX_IMAGES,
    missing_images,
    normalize,
    object_images,
)


@pytest.mark.parametrize("ref, stored", [
    ("prom/prometheus:v2.39.1", "docker.io/prom/prometheus:v2.39.1"),
    ("docker.io/prom/prometheus:v2.39.1", "docker.io/prom/prometheus:v2.39.1"),
    ("index.docker.io/prom/prometheus:v2.39.1", "docker.io/prom/prometheus:v2.39.1"),
    ("busybox:1.31.1", "docker.io/library/busybox:1.31.1"),
    ("library/busybox:1.31.1", "docker.io/library/busybox:1.31.1"),
    ("busybox", "docker.io/library/busybox:latest"),
    ("registry.k8s.io/metrics-server/metrics-server:v0.9.0", "registry.k8s.io/metrics-server/metrics-server:v0.9.0"),
    ("registry.example:5000/kubesphere/ks-apiserver:v3.4.1", "registry.example:5000/kubesphere/ks-apiserver:v3.4.1"),
    ("registry.example:5000/kubesphere/ks-apiserver", "registry.example:5000/kubesphere/ks-apiserver:latest"),
    ("localhost/slipway/operator:0.1.0", "localhost/slipway/operator:0.1.0"),
    ("Mirror/kubesphere/ks-apiserver:v3.4.1", "Mirror/kubesphere/ks-apiserver:v3.4.1"),
    ("prom/prometheus@sha256:" + "a" * 64, "docker.io/prom/prometheus@sha256:" + "a" * 64),
    ("prom/prometheus:v2.39.1@sha256:" + "a" * 64, "docker.io/prom/prometheus@sha256:" + "a" * 64),
    (" prom/prometheus:v2.39.1 ", "docker.io/prom/prometheus:v2.39.1"),
])
def test_references_are_compared_as_containerd_stores_them(ref, stored):
    assert normalize(ref) == stored


def deployment(*images, init=(), args=()):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
            "spec": {"template": {"spec": {
                "initContainers": [{"name": f"init{n}", "image": image} for n, image in enumerate(init)],
                "containers": [{"name": f"c{n}", "image": image, "args": list(args)} for n, image in enumerate(images)]}}}}


def test_the_images_of_pod_templates_custom_resources_and_the_reloader_flag():
    objects = [
        deployment("kubesphere/prometheus-operator:v0.55.1", "kubesphere/kube-rbac-proxy:v0.11.0",
                   args=["--kubelet-service=kube-system/kubelet",
                         "--prometheus-config-reloader=kubesphere/prometheus-config-reloader:v0.55.1"]),
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "curator"},
         "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
             {"name": "curator", "image": "kubesphere/elasticsearch-curator:v5.7.6"}]}}}}}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": {"name": "k8s"},
         "spec": {"image": "prom/prometheus:v2.39.1", "replicas": 1}},
        deployment("kubesphere/elasticsearch-oss:6.8.22", init=["library/busybox:1.31.1"]),
        # A second object with an image already found, and one naming no image.
        deployment("prom/prometheus:v2.39.1"),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "app"}, "spec": {"ports": [{"port": 80}]}},
    ]
    assert object_images(objects) == sorted([
        "kubesphere/prometheus-operator:v0.55.1", "kubesphere/kube-rbac-proxy:v0.11.0",
        "kubesphere/prometheus-config-reloader:v0.55.1", "kubesphere/elasticsearch-curator:v5.7.6",
        "prom/prometheus:v2.39.1", "kubesphere/elasticsearch-oss:6.8.22", "library/busybox:1.31.1"])


def test_configmaps_and_secrets_run_nothing():
    objects = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubesphere-config"},
                "data": {"kubesphere.yaml": "terminal:\n  kubectlImage: kubesphere/kubectl:v1.22.0\n"}},
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "structured"}, "data": {"image": "x:1"}},
               {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"image": "y:1"}},
               "not an object", None]
    assert object_images(objects) == []


def test_an_empty_image_field_is_no_image():
    assert object_images([deployment(""), deployment("  ")]) == []


def node(name, *images, filler=0):
    """A Node as the kubelet reports it: every image with its tag and digest names."""
    listed = [{"names": [f"{image.split(':')[0]}@sha256:{'0' * 64}", image], "sizeBytes": 1000} for image in images]
    listed += [{"names": [f"docker.io/library/filler{n}:1"], "sizeBytes": 1} for n in range(filler)]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"images": listed}}


OPERATOR = "docker.io/kubesphere/prometheus-operator:v0.55.0"
RELOADER = "docker.io/kubesphere/prometheus-config-reloader:v0.55.0"


def test_an_image_every_node_holds_is_not_missing():
    nodes = [node("cp1", OPERATOR, RELOADER), node("w1", RELOADER, OPERATOR)]
    assert missing_images(nodes, ["kubesphere/prometheus-operator:v0.55.0", RELOADER]) == []


def test_an_image_some_nodes_lack_names_them_and_one_all_lack_says_so():
    nodes = [node("w2", OPERATOR), node("cp1", OPERATOR, RELOADER), node("w1", OPERATOR)]
    assert missing_images(nodes, [RELOADER, "prom/prometheus:v2.39.1", OPERATOR]) == [
        {"image": RELOADER, "nodes": ["w1", "w2"], "on_no_node": False, "where": "not on w1, w2"},
        {"image": "prom/prometheus:v2.39.1", "nodes": ["cp1", "w1", "w2"], "on_no_node": True, "where": "on no node"},
    ]


def test_another_tag_of_the_same_image_is_not_the_image():
    nodes = [node("cp1", "docker.io/kubesphere/prometheus-operator:v0.55.1")]
    assert [entry["image"] for entry in missing_images(nodes, [OPERATOR])] == [OPERATOR]


def test_a_node_whose_list_may_be_cut_short_lacks_nothing():
    """The kubelet lists at most nodeStatusMaxImages (50) images, the largest first: one more may be unlisted."""
    full = node("big", filler=NODE_STATUS_MAX_IMAGES)
    short = node("small", filler=NODE_STATUS_MAX_IMAGES - 1)
    assert missing_images([full], [OPERATOR]) == []
    assert missing_images([full, short], [OPERATOR]) == [
        {"image": OPERATOR, "nodes": ["small"], "on_no_node": False, "where": "not on small"}]


def test_without_nodes_or_status_nothing_or_everything_is_missing():
    assert missing_images([], [OPERATOR]) == []
    bare = {"metadata": {"name": "new"}}
    assert missing_images([bare], [OPERATOR, OPERATOR]) == [
        {"image": OPERATOR, "nodes": ["new"], "on_no_node": True, "where": "on no node"}]


def test_the_filters_are_these_functions():
    filters = FilterModule().filters()
    assert filters["object_images"] is object_images
    assert filters["missing_images"] is missing_images
