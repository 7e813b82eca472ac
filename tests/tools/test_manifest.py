import hashlib
import os

import pytest
import yaml

from bundler import manifest


def sample(bundle):
    os.makedirs(os.path.join(bundle, "bin", "cni"))
    os.makedirs(os.path.join(bundle, "images"))
    for rel, data in (("bin/kubeadm", b"kubeadm"), ("bin/cni/bridge", b"bridge"),
                      ("images/pause.tar", b"pause archive")):
        with open(os.path.join(bundle, rel), "wb") as handle:
            handle.write(data)
    data = {
        "format_version": 1,
        "kubernetes_version": "v1.37.1",
        "arch": "amd64",
        "backend": "source",
        "components": {"kubernetes": {"version": "v1.37.1", "source": "k8s.io/kubernetes"},
                       "pause": {"version": "3.10.2", "source": "pause.c: \"quoted\""}},
        "binaries": [manifest.file_entry(bundle, "bin/cni/bridge", component="cni_plugins"),
                     manifest.file_entry(bundle, "bin/kubeadm", component="kubernetes")],
        "images": [manifest.file_entry(bundle, "images/pause.tar", name="pause",
                                       ref="registry.k8s.io/pause:3.10.2", component="pause")],
    }
    manifest.write(bundle, data)
    return data


def test_dump_is_yaml_and_reads_back_without_pyyaml(tmp_path):
    data = sample(str(tmp_path))
    text = open(os.path.join(str(tmp_path), "manifest.yml")).read()
    assert yaml.safe_load(text) == data
    assert manifest.parse_subset(text) == data


def test_subset_parser_reads_lists_at_key_indent():
    text = "a: 1\nitems:\n- path: \"x\"\n  size: 2\n- path: \"y\"\n  size: 3\nb: {}\n"
    assert manifest.parse_subset(text) == {
        "a": 1, "items": [{"path": "x", "size": 2}, {"path": "y", "size": 3}], "b": {}}


def test_entries_have_sha256_and_size(tmp_path):
    data = sample(str(tmp_path))
    entry = data["binaries"][1]
    assert entry["path"] == "bin/kubeadm"
    assert entry["size"] == 7
    assert entry["sha256"] == hashlib.sha256(b"kubeadm").hexdigest()


def test_verify_passes(tmp_path):
    sample(str(tmp_path))
    assert manifest.verify(str(tmp_path)) == []


def test_verify_names_file_and_both_checksums(tmp_path):
    bundle = str(tmp_path)
    data = sample(bundle)
    with open(os.path.join(bundle, "bin", "kubeadm"), "wb") as handle:
        handle.write(b"kubeadX")
    problems = manifest.verify(bundle)
    assert len(problems) == 1
    assert problems[0].startswith("MISMATCH bin/kubeadm")
    assert data["binaries"][1]["sha256"] in problems[0]
    assert manifest.sha256_file(os.path.join(bundle, "bin", "kubeadm")) in problems[0]


def test_verify_names_missing_and_unlisted_files(tmp_path):
    bundle = str(tmp_path)
    sample(bundle)
    os.remove(os.path.join(bundle, "images", "pause.tar"))
    with open(os.path.join(bundle, "bin", "extra"), "wb") as handle:
        handle.write(b"x")
    problems = manifest.verify(bundle)
    assert any(p.startswith("MISSING images/pause.tar") for p in problems)
    assert any(p.startswith("UNLISTED bin/extra") for p in problems)


def test_quick_verify_checks_sizes_only(tmp_path):
    bundle = str(tmp_path)
    sample(bundle)
    with open(os.path.join(bundle, "bin", "kubeadm"), "wb") as handle:
        handle.write(b"kubeadX")
    assert manifest.verify(bundle, quick=True) == []
    with open(os.path.join(bundle, "bin", "kubeadm"), "wb") as handle:
        handle.write(b"longer kubeadm")
    assert manifest.verify(bundle, quick=True)[0].startswith("SIZE bin/kubeadm")


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("arch"), "arch"),
    (lambda d: d.update(format_version=2), "format_version"),
    (lambda d: d["images"][0].pop("ref"), "no ref"),
    (lambda d: d["binaries"][0].update(path="../etc/passwd"), "leaves the bundle"),
    (lambda d: d["binaries"][0].update(path="/bin/sh"), "leaves the bundle"),
])
def test_validate_names_bad_fields(tmp_path, mutate, message):
    data = sample(str(tmp_path))
    mutate(data)
    with pytest.raises(manifest.ManifestError, match=message):
        manifest.validate(data)


def test_load_without_manifest(tmp_path):
    with pytest.raises(manifest.ManifestError, match="no such file"):
        manifest.load(str(tmp_path))


def sample_two_releases(bundle):
    """The sample bundle with a second Kubernetes release under releases/v1.36.5/."""
    data = sample(bundle)
    prefix = "releases/v1.36.5/"
    os.makedirs(os.path.join(bundle, prefix, "bin"))
    os.makedirs(os.path.join(bundle, prefix, "images"))
    for rel, content in (("bin/kubeadm", b"kubeadm 1.36"), ("images/pause.tar", b"pause 3.10.1")):
        with open(os.path.join(bundle, prefix + rel), "wb") as handle:
            handle.write(content)
    data["releases"] = [{
        "kubernetes_version": "v1.36.5",
        "components": {"kubernetes": {"version": "v1.36.5", "source": "k8s.io/kubernetes"}},
        "binaries": [manifest.file_entry(bundle, prefix + "bin/kubeadm", component="kubernetes")],
        "images": [manifest.file_entry(bundle, prefix + "images/pause.tar", name="pause",
                                       ref="registry.k8s.io/pause:3.10.1", component="pause")],
    }]
    manifest.write(bundle, data)
    return data


def test_second_release_reads_back_and_verifies(tmp_path):
    bundle = str(tmp_path)
    data = sample_two_releases(bundle)
    text = open(os.path.join(bundle, "manifest.yml")).read()
    assert yaml.safe_load(text) == data
    assert manifest.parse_subset(text) == data
    assert [release["kubernetes_version"] for release in manifest.releases(manifest.load(bundle))] == [
        "v1.37.1", "v1.36.5"]
    assert manifest.verify(bundle) == []
    with open(os.path.join(bundle, "releases/v1.36.5/bin/kubeadm"), "ab") as handle:
        handle.write(b"!")
    with open(os.path.join(bundle, "releases/v1.36.5/bin/extra"), "wb") as handle:
        handle.write(b"x")
    problems = manifest.verify(bundle)
    assert problems[0].startswith("MISMATCH releases/v1.36.5/bin/kubeadm")
    assert problems[1].startswith("SIZE releases/v1.36.5/bin/kubeadm")
    assert problems[2].startswith("UNLISTED releases/v1.36.5/bin/extra")


def test_a_release_keeps_to_its_directory_and_is_listed_once(tmp_path):
    data = sample_two_releases(str(tmp_path))
    data["releases"][0]["images"][0]["path"] = "images/pause.tar"
    data["releases"].append(dict(data["releases"][0], kubernetes_version="v1.37.1"))
    with pytest.raises(manifest.ManifestError) as err:
        manifest.validate(data)
    text = str(err.value)
    assert "releases[0].images[0]: path 'images/pause.tar' leaves the bundle or is outside " \
           "releases/v1.36.5/bin/" in text
    assert "releases[1].kubernetes_version: v1.37.1 is in the bundle twice" in text
