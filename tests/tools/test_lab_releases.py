"""Tests of lab/lab.py's Debian release per node: `--node NAME:GROUPS:RELEASE`, one image per release."""

import pathlib

import lab
import pytest


def test_a_node_names_its_release_after_its_groups():
    node = lab.parse_node("w3:kube_node:trixie")
    assert (node.name, node.groups, node.release) == ("w3", ("kube_node",), "trixie")
    assert lab.parse_node("cp1:kube_control_plane,etcd").release == lab.DEFAULT_RELEASE == "bookworm"
    assert lab.parse_node("t1::trixie").groups == ()


def test_an_unknown_release_is_refused_with_the_ones_there_are():
    with pytest.raises(lab.LabError, match="bad release 'sid' in --node 'w1:kube_node:sid': use one of bookworm, trixie"):
        lab.parse_node("w1:kube_node:sid")


def test_each_release_runs_its_own_image():
    cluster = lab.Cluster("lab", "10.88.100.0/24", lab.parse_nodes(
        ["cp1:kube_control_plane,etcd", "w1:kube_node:trixie"]))
    for node in cluster.nodes.values():
        node.ip = "10.88.100.11"
    key = pathlib.Path("/k/id")
    bookworm = lab.node_run_args(cluster, cluster.nodes["cp1"], key)
    trixie = lab.node_run_args(cluster, cluster.nodes["w1"], key)
    assert bookworm[-1] == lab.IMAGE == "localhost/slipway/node:bookworm"
    assert trixie[-1] == "localhost/slipway/node:trixie"
    # The release is on the container, so that `up` with another release makes the node again.
    assert f"{lab.LABEL}.release=trixie" in trixie and f"{lab.LABEL}.release=bookworm" in bookworm


def test_an_image_named_by_the_environment_gets_a_sibling_per_release(monkeypatch):
    monkeypatch.setattr(lab, "IMAGE", "localhost/slipway/node:cold")
    assert lab.image_for("bookworm") == "localhost/slipway/node:cold"
    assert lab.image_for("trixie") == "localhost/slipway/node:cold-trixie"


def test_the_release_survives_the_state_file_and_old_state_is_bookworm():
    cluster = lab.Cluster("lab", "10.88.100.0/24", {"w1": lab.Node("w1", ("kube_node",), "10.88.100.12", "trixie")})
    assert lab.Cluster.from_json(cluster.to_json()) == cluster
    old = cluster.to_json().replace(',\n      "release": "trixie"', "")
    assert '"release"' not in old
    assert lab.Cluster.from_json(old).nodes["w1"].release == "bookworm"


def test_a_node_made_from_another_release_is_made_again(monkeypatch):
    cluster = lab.Cluster("lab", "10.88.100.0/24", {"w1": lab.Node("w1", ("kube_node",), "10.88.100.12", "trixie")})
    running = lab.Container("slipway-lab-w1", "lab", "w1", "10.88.100.12", "running", "abc", "bookworm")
    calls = []
    monkeypatch.setattr(lab, "list_containers", lambda name: [running])
    monkeypatch.setattr(lab, "remove_containers", calls.append)
    monkeypatch.setattr(lab, "run_node", lambda cluster, node, key: calls.append(("run", node.name, node.release)))
    done = lab.converge_nodes(cluster, pathlib.Path("/k/id"))
    assert calls == [["slipway-lab-w1"], ("run", "w1", "trixie")]
    assert done == ["removed slipway-lab-w1", "created w1 (10.88.100.12)"]
