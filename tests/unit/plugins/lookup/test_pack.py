# Unit tests of the pack lookup on real files: one tar of the archives, made once per set of images, complete
# or not there, and old ones pruned.
from __future__ import annotations

import os
import tarfile
import time

import pytest

from ansible.errors import AnsibleLookupError

from ansible_collections.slipway.cluster.plugins.lookup import pack


@pytest.fixture(name="images")
def fixture_images(tmp_path):
    bundle = tmp_path / "bundle" / "images"
    bundle.mkdir(parents=True)
    found = []
    for name, data in (("pause", b"pause archive"), ("kube-apiserver", b"apiserver archive" * 1000)):
        (bundle / f"{name}.tar").write_bytes(data)
        found.append({"key": name, "value": {"src": str(bundle / f"{name}.tar"), "sha256": name * 4, "ref": name}})
    return found


def run(terms, cache_dir, keep_hours=24, suffix=".tar"):
    return [pack.make_pack(pack.archives(terms), str(cache_dir), keep_hours, suffix)]


def test_one_tar_holds_every_archive_by_name(tmp_path, images):
    [path] = run(images, tmp_path / "cache")
    with tarfile.open(path) as tar:
        assert tar.getnames() == ["kube-apiserver.tar", "pause.tar"]
        assert tar.extractfile("pause.tar").read() == b"pause archive"
        assert {(m.uid, m.mode) for m in tar.getmembers()} == {(0, 0o600)}


def test_the_same_images_reuse_the_file_and_others_get_their_own(tmp_path, images):
    [first] = run(images, tmp_path / "cache")
    made = os.stat(first).st_ino
    [again] = run(list(reversed(images)), tmp_path / "cache")
    assert again == first and os.stat(again).st_ino == made
    [fewer] = run(images[:1], tmp_path / "cache")
    assert fewer != first
    changed = [dict(images[0], value=dict(images[0]["value"], sha256="other"))]
    assert run(changed, tmp_path / "cache")[0] not in (first, fewer)


def test_unused_files_and_left_over_temporaries_are_pruned(tmp_path, images):
    cache = tmp_path / "cache"
    [old] = run(images[:1], cache)
    leftover = cache / ".tmp-abc"
    leftover.write_bytes(b"half a tar")
    unrelated = cache / "notes.txt"
    unrelated.write_text("mine", encoding="utf-8")
    long_ago = time.time() - 3 * 86400
    for path in (old, leftover, unrelated):
        os.utime(path, (long_ago, long_ago))
    [new] = run(images, cache)
    assert os.path.exists(new) and not os.path.exists(old) and not leftover.exists() and unrelated.exists()


def test_the_least_recently_used_packs_go_over_the_size_bound(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    now = time.time()
    sizes = {"a": 3, "b": 2, "c": 2, "keep": 1}  # MiB; used in this order, "keep" being the pack just made
    for age, (name, size) in enumerate(reversed(list(sizes.items()))):
        path = cache / (name + pack._SUFFIX)
        path.write_bytes(b"x" * size * 1024 * 1024)
        os.utime(path, (now - 60 * age, now - 60 * age))
    (cache / "notes.txt").write_text("mine", encoding="utf-8")
    removed = pack.prune(str(cache), "keep" + pack._SUFFIX, 24, now=now, keep_megabytes=4)
    assert removed == ["a" + pack._SUFFIX, "b" + pack._SUFFIX]
    assert sorted(p.name for p in cache.iterdir()) == sorted(["c" + pack._SUFFIX, "keep" + pack._SUFFIX, "notes.txt"])
    # the pack just made stays even when it alone is over the bound
    assert pack.prune(str(cache), "keep" + pack._SUFFIX, 24, now=now, keep_megabytes=0) == ["c" + pack._SUFFIX]
    assert (cache / ("keep" + pack._SUFFIX)).exists()


def test_a_failed_pack_leaves_no_file_behind(tmp_path, images):
    broken = images + [{"key": "gone", "value": {"src": str(tmp_path / "gone.tar"), "sha256": "x", "ref": "gone"}}]
    with pytest.raises(FileNotFoundError):
        run(broken, tmp_path / "cache")
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".lock"]


@pytest.mark.parametrize("terms, message", [
    ([], "no file"),
    (["pause"], "mappings"),
    ([{"key": "pause", "value": {"src": "/x"}}], "name, src and sha256"),
    ([{"name": "a", "src": "/a", "sha256": "1"}, {"name": "a", "src": "/b", "sha256": "2"}], "twice"),
])
def test_bad_terms_are_refused(tmp_path, terms, message):
    with pytest.raises(AnsibleLookupError, match=message):
        run(terms, tmp_path / "cache")


def test_plain_mappings_are_taken_too(tmp_path, images):
    plain = [{"name": i["key"], "src": i["value"]["src"], "sha256": i["value"]["sha256"]} for i in images]
    assert run(plain, tmp_path / "a")[0].endswith(pack.pack_name(pack.archives(images), ".tar"))
    [bare] = run(plain, tmp_path / "b", suffix="")
    with tarfile.open(bare) as tar:
        assert tar.getnames() == ["kube-apiserver", "pause"]


def test_binaries_are_named_by_their_sha256(tmp_path, images):
    binaries = [{"name": "kubeadm", "dest": "/usr/local/bin/kubeadm", "src": images[0]["value"]["src"], "sha256": "ab" * 32}]
    [path] = [pack.make_pack(pack.archives(binaries, "sha256"), str(tmp_path / "c"))]
    with tarfile.open(path) as tar:
        assert tar.getnames() == ["ab" * 32]


def test_the_cache_is_the_users(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert pack.default_cache_dir() == str(tmp_path / "slipway" / "packs")
