"""Tests of lab/lab.py's disk check: new nodes are refused before any is made when they would fill the disk."""

import pytest

import lab

MB = 1024**2


def bundle(tmp_path, images, binaries):
    """A bundle whose images and binaries are links into a cache, as the bundle builder makes them."""
    cache = tmp_path / "cache"
    cache.mkdir()
    root = tmp_path / "bundle"
    for folder, sizes in (("images", images), ("bin", binaries)):
        (root / folder).mkdir(parents=True)
        for index, size in enumerate(sizes):
            target = cache / f"{folder}-{index}"
            target.write_bytes(b"\0" * size)
            (root / folder / f"file-{index}").symlink_to(target)
    return root


def test_a_node_needs_the_bundles_images_twice_and_its_binaries(tmp_path):
    root = bundle(tmp_path, [3 * MB, 1 * MB], [2 * MB])
    assert lab.node_disk_need(str(root)) == 2 * 4 * MB + 2 * MB + lab.NODE_DISK_MARGIN


def test_without_a_bundle_a_node_is_counted_at_the_default(tmp_path):
    assert lab.node_disk_need(None) == lab.NODE_DISK_WITHOUT_BUNDLE
    assert lab.node_disk_need(str(tmp_path / "missing")) == lab.NODE_DISK_WITHOUT_BUNDLE


def test_too_little_space_is_refused_with_what_to_do():
    with pytest.raises(lab.LabError) as error:
        lab.check_space(5, 3 * 1024**3, "/var/lib/containers/storage", 14 * 1024**3)
    assert str(error.value) == (
        "5 new node(s) need about 15.0 GB on /var/lib/containers/storage (podman's storage: each node imports "
        "the bundle's images and binaries, about 3.0 GB), and it has 14.0 GB free: free space there, or make "
        "fewer nodes (LAB_NODES)")


def test_enough_space_or_no_new_node_passes():
    lab.check_space(5, 3 * 1024**3, "/var/lib/containers/storage", 15 * 1024**3)
    lab.check_space(0, 3 * 1024**3, "/var/lib/containers/storage", 0)


def test_up_checks_before_it_makes_any_node(tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr(lab, "ensure_image", lambda home, release: False)
    monkeypatch.setattr(lab, "ensure_key", lambda home: tmp_path / "key")
    monkeypatch.setattr(lab, "raise_kernel_limits", lambda: [])
    monkeypatch.setattr(lab, "lab_home", lambda: tmp_path)
    monkeypatch.setattr(lab, "list_containers", lambda cluster=None: [])
    monkeypatch.setattr(lab, "storage_free", lambda: ("/var/lib/containers/storage", 1024**3))
    monkeypatch.setattr(lab, "run_node", lambda cluster, node, key: made.append(node))
    monkeypatch.setattr(lab, "remove_containers", made.extend)
    root = bundle(tmp_path, [600 * MB], [100 * MB])
    args = lab.build_parser().parse_args(
        ["up", "--cluster", "t", "--inventory", str(tmp_path / "hosts.yml"), "--node", "cp1:kube_control_plane,etcd",
         "--vars", "slipway_artifacts_bundle_dir=" + str(root)])
    with pytest.raises(lab.LabError, match="1 new node"):
        args.func(args)
    assert not made
    assert not (tmp_path / "hosts.yml").exists()


def test_a_node_to_recreate_counts_and_nothing_is_removed_before_the_refusal(monkeypatch):
    changed = []
    cluster = lab.Cluster(name="t", subnet="10.88.100.0/24",
                          nodes={"cp1": lab.Node("cp1", ("kube_control_plane",), "10.88.100.11")})
    old = lab.Container(lab.container_name("t", "cp1"), "t", "cp1", "10.88.100.99", "running", "x")
    monkeypatch.setattr(lab, "list_containers", lambda cluster=None: [old])
    monkeypatch.setattr(lab, "storage_free", lambda: ("/var/lib/containers/storage", 1024**3))
    monkeypatch.setattr(lab, "remove_containers", changed.extend)
    monkeypatch.setattr(lab, "run_node", lambda cluster, node, key: changed.append(node))
    with pytest.raises(lab.LabError, match="1 new node"):
        lab.converge_nodes(cluster, "key", 2 * 1024**3)
    assert not changed
