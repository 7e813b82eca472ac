"""Tests of the inventory lab/lab.py writes: nothing pulled, and KubeSphere's lab settings only with slipway_kubesphere_enabled."""

import pathlib

import yaml

import lab

CLUSTER = lab.Cluster("lab", "10.88.100.0/24", {"cp1": lab.Node("cp1", ("kube_control_plane", "etcd"), "10.88.100.11")})


def inventory_vars(extra):
    text = lab.render_inventory(CLUSTER, pathlib.Path("/k/id"), extra)
    return yaml.safe_load(text.split("---\n", 1)[1])["all"]["vars"]


def test_without_kubesphere_only_that_nothing_is_pulled():
    """A cluster made without KubeSphere may get its components later (slipway-operator): they pull nothing either."""
    for extra in ({}, {"slipway_kubesphere_enabled": False}):
        found = inventory_vars(extra)
        assert {name: value for name, value in found.items() if name.startswith("kubesphere_")} == {
            "kubesphere_image_pull_policy": "Never"}


def test_kubesphere_in_the_lab_waits_for_what_it_can_run():
    found = inventory_vars({"slipway_kubesphere_enabled": True})
    assert found["kubesphere_image_pull_policy"] == "Never"
    assert found["kubesphere_wait"] == ["metrics_server", "monitoring", "alerting", "core"]
    assert found["kubesphere_cluster_configuration"] == {"spec": {"monitoring": {"prometheus": {"volumeSize": ""}}}}


def test_vars_given_win_over_the_lab_settings():
    found = inventory_vars({"slipway_kubesphere_enabled": True, "kubesphere_wait": True})
    assert found["kubesphere_wait"] is True
    assert found["kubesphere_image_pull_policy"] == "Never"


def test_a_volume_is_mounted_into_every_node_before_the_image(tmp_path):
    spec = lab.parse_volume(f"{tmp_path}:/srv/slipway-bundle:ro")
    cluster = lab.Cluster("lab", "10.88.100.0/24", dict(CLUSTER.nodes), volumes=(spec,))
    args = lab.node_run_args(cluster, cluster.nodes["cp1"], pathlib.Path("/k/id"))
    assert args[args.index(spec) - 1] == "--volume" and args.index(spec) < args.index(lab.IMAGE)
    assert lab.Cluster.from_json(cluster.to_json()) == cluster
    # Without volumes, a node has only its own: the containerd volume and the lab's public key.
    assert lab.node_run_args(CLUSTER, CLUSTER.nodes["cp1"], pathlib.Path("/k/id")).count("--volume") == 2
    assert args.count("--volume") == 3
    assert lab.Cluster.from_json(CLUSTER.to_json()).volumes == ()


def test_a_bad_volume_is_refused_with_what_to_write(tmp_path):
    for spec, words in ((f"{tmp_path}", "SRC:DST"), (f"{tmp_path}:/x:rw", "SRC:DST:ro"), ("bundle:/x", "absolute"),
                        (f"{tmp_path}/missing:/x", "not a directory")):
        try:
            lab.parse_volume(spec)
        except lab.LabError as exc:
            assert words in str(exc), (spec, exc)
        else:
            raise AssertionError(f"{spec} was accepted")
