# Unit tests of the controller's checksum cache: a bundle file is read whole again whenever it may have changed,
# and never when its identity and times are those it had.
from __future__ import annotations

import hashlib
import json
import os

from ansible_collections.slipway.cluster.plugins.module_utils._file_checksums import ChecksumCache, default_cache_path


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_file_is_hashed_once_while_it_does_not_change(tmp_path):
    cache_file = tmp_path / "cache" / "file-sha256.json"
    binary = tmp_path / "kubeadm"
    binary.write_bytes(b"kubeadm v1")
    first = ChecksumCache(str(cache_file))
    assert first.sha256(str(binary)) == _sha(b"kubeadm v1")
    assert first.hashed == [str(binary)]
    first.save()
    second = ChecksumCache(str(cache_file))
    assert second.sha256(str(binary)) == _sha(b"kubeadm v1")
    assert second.hashed == []


def test_a_file_changed_in_place_with_its_size_and_mtime_kept_is_hashed_again(tmp_path):
    cache_file = tmp_path / "file-sha256.json"
    binary = tmp_path / "kubelet"
    binary.write_bytes(b"aaaa")
    stat = os.stat(binary)
    cache = ChecksumCache(str(cache_file))
    cache.sha256(str(binary))
    cache.save()
    # Same size, modification time set back: only the change time tells.
    binary.write_bytes(b"bbbb")
    os.utime(binary, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = ChecksumCache(str(cache_file))
    assert again.sha256(str(binary)) == _sha(b"bbbb")
    assert again.hashed == [str(binary)]


def test_a_file_replaced_by_another_is_hashed_again(tmp_path):
    cache_file = tmp_path / "file-sha256.json"
    binary = tmp_path / "etcd"
    binary.write_bytes(b"one")
    cache = ChecksumCache(str(cache_file))
    cache.sha256(str(binary))
    cache.save()
    other = tmp_path / "etcd.new"
    other.write_bytes(b"two")
    os.replace(other, binary)
    assert ChecksumCache(str(cache_file)).sha256(str(binary)) == _sha(b"two")


def test_missing_files_and_directories_have_no_checksum(tmp_path):
    cache = ChecksumCache(str(tmp_path / "c.json"))
    assert cache.sha256(str(tmp_path / "nothing")) is None
    assert cache.sha256(str(tmp_path)) is None


def test_a_damaged_or_foreign_cache_is_ignored(tmp_path):
    binary = tmp_path / "ctr"
    binary.write_bytes(b"ctr")
    for content in ("not json", json.dumps([1, 2]), json.dumps({"files": {str(binary): {"id": [], "sha256": 3}}})):
        (tmp_path / "c.json").write_text(content, encoding="utf-8")
        cache = ChecksumCache(str(tmp_path / "c.json"))
        assert cache.sha256(str(binary)) == _sha(b"ctr")
        assert cache.hashed == [str(binary)]


def test_an_unwritable_cache_only_costs_the_hashing(tmp_path):
    binary = tmp_path / "runc"
    binary.write_bytes(b"runc")
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache's directory would be", encoding="utf-8")
    cache = ChecksumCache(str(blocker / "sub" / "c.json"))
    assert cache.sha256(str(binary)) == _sha(b"runc")
    cache.save()
    assert ChecksumCache(str(blocker / "sub" / "c.json")).sha256(str(binary)) == _sha(b"runc")


def test_nothing_hashed_nothing_written(tmp_path):
    cache = ChecksumCache(str(tmp_path / "c.json"))
    cache.save()
    assert not (tmp_path / "c.json").exists()


def test_the_cache_lives_in_the_users_cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_path() == str(tmp_path / "slipway" / "file-sha256.json")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_path() == str(tmp_path / "home" / ".cache" / "slipway" / "file-sha256.json")
