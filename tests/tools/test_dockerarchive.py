import hashlib
import json
import os
import tarfile

import pytest

from bundler import dockerarchive


def make_layer(tmp_path):
    program = tmp_path / "prog"
    program.write_bytes(b"\x7fELF fake program")
    program.chmod(0o755)
    layer = dockerarchive.Layer()
    layer.add_file("/usr/local/bin/prog", source=str(program))
    layer.add_file("/etc/passwd", data=b"root:x:0:0::/root:/sbin/nologin\n")
    layer.add_symlink("/bin/sh", "/bin/busybox")
    layer.add_dir("/tmp", 0o1777)
    return layer


def test_archive_layout_matches_docker_save(tmp_path):
    out = str(tmp_path / "img.tar")
    ref = "registry.k8s.io/kube-apiserver:v1.37.1"
    digest = dockerarchive.write_image(out, make_layer(tmp_path), ref,
                                       cmd=["/usr/local/bin/prog"])
    with tarfile.open(out) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        assert manifest[0]["RepoTags"] == [ref]
        config_bytes = tar.extractfile(manifest[0]["Config"]).read()
        layer_bytes = tar.extractfile(manifest[0]["Layers"][0]).read()
        repositories = json.load(tar.extractfile("repositories"))
        assert all(member.mtime == 0 for member in tar.getmembers())
    config = json.loads(config_bytes)
    assert digest == "sha256:" + hashlib.sha256(config_bytes).hexdigest()
    assert manifest[0]["Config"] == hashlib.sha256(config_bytes).hexdigest() + ".json"
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer_bytes).hexdigest()]
    assert config["architecture"] == "amd64" and config["os"] == "linux"
    assert config["config"]["Cmd"] == ["/usr/local/bin/prog"]
    assert config["config"]["Env"] == ["PATH=" + dockerarchive.DEFAULT_PATH]
    assert repositories == {"registry.k8s.io/kube-apiserver": {
        "v1.37.1": hashlib.sha256(layer_bytes).hexdigest()}}


def test_layer_entries_are_sorted_root_owned_and_fixed_time(tmp_path):
    out = str(tmp_path / "img.tar")
    dockerarchive.write_image(out, make_layer(tmp_path), "example.org/x:1")
    _manifest, _config, names = dockerarchive.read_image(out)
    assert names == sorted(names)
    assert names[:2] == ["bin", "bin/sh"]
    with tarfile.open(out) as tar:
        member = json.load(tar.extractfile("manifest.json"))[0]["Layers"][0]
        with tarfile.open(fileobj=tar.extractfile(member)) as layer:
            members = {m.name: m for m in layer.getmembers()}
    assert all(m.uid == 0 and m.gid == 0 and m.mtime == 0 for m in members.values())
    assert members["usr/local/bin/prog"].mode == 0o755
    assert members["etc/passwd"].mode == 0o644
    assert members["tmp"].mode == 0o1777
    assert members["bin/sh"].issym() and members["bin/sh"].linkname == "/bin/busybox"
    assert members["usr"].isdir() and members["usr/local"].isdir()


def test_reproducible(tmp_path):
    first, second = str(tmp_path / "a.tar"), str(tmp_path / "b.tar")
    dockerarchive.write_image(first, make_layer(tmp_path), "example.org/x:1", entrypoint=["/x"])
    os.utime(str(tmp_path / "prog"), (12345, 12345))
    dockerarchive.write_image(second, make_layer(tmp_path), "example.org/x:1", entrypoint=["/x"])
    assert open(first, "rb").read() == open(second, "rb").read()


def test_conflicting_paths_are_refused(tmp_path):
    layer = make_layer(tmp_path)
    with pytest.raises(dockerarchive.LayerError):
        layer.add_file("/etc/passwd", data=b"other")
    with pytest.raises(dockerarchive.LayerError):
        layer.add_file("/bin/sh/x", data=b"under a symlink")
    with pytest.raises(dockerarchive.LayerError):
        layer.add_file("/../escape", data=b"x")


@pytest.mark.parametrize("ref, repo, tag", [
    ("registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause", "3.10.2"),
    ("localhost:5000/a/b:v1", "localhost:5000/a/b", "v1"),
    ("registry.k8s.io/coredns/coredns:v1.14.6", "registry.k8s.io/coredns/coredns", "v1.14.6"),
])
def test_split_ref(ref, repo, tag):
    assert dockerarchive.split_ref(ref) == (repo, tag)


@pytest.mark.parametrize("ref", ["localhost:5000/a", "a/b@sha256:00", "pause"])
def test_split_ref_needs_a_tag(ref):
    with pytest.raises(ValueError):
        dockerarchive.split_ref(ref)


def test_a_directory_can_belong_to_a_user(tmp_path):
    """A program's data directory that its non-root user writes (Prometheus's /prometheus)."""
    layer = make_layer(tmp_path)
    layer.add_dir("/prometheus", 0o755, uid=65534, gid=65534)
    layer.add_file("/prometheus/keep", data=b"")
    out = str(tmp_path / "img.tar")
    dockerarchive.write_image(out, layer, "example.org/x:1")
    with tarfile.open(out) as tar:
        member = json.load(tar.extractfile("manifest.json"))[0]["Layers"][0]
        with tarfile.open(fileobj=tar.extractfile(member)) as inner:
            members = {m.name: m for m in inner.getmembers()}
    assert (members["prometheus"].uid, members["prometheus"].gid) == (65534, 65534)
    assert members["prometheus/keep"].uid == 0 and members["tmp"].uid == 0
