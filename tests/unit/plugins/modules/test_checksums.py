# Unit tests of slipway.cluster.checksums, on real files: checksums, what the cache saves, and that a
# changed file is always hashed again, even when its size and modification time were set back.
from __future__ import annotations

import hashlib
import json
import os

import pytest

from ansible.module_utils import basic

from ansible_collections.slipway.cluster.plugins.modules import checksums
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import _exit_json, _fail_json, run_main


@pytest.fixture(autouse=True)
def _exits(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)


@pytest.fixture
def binary(tmp_path):
    path = tmp_path / "bin" / "kubeadm"
    path.parent.mkdir()
    path.write_bytes(b"kubeadm build one")
    path.chmod(0o755)
    return path


def call(paths, cache, check_mode=False):
    return run_main(checksums.main, {"paths": [str(p) for p in paths], "cache": str(cache),
                                     "_ansible_check_mode": check_mode})


def test_reads_checksum_and_attributes_and_names_missing_paths(tmp_path, binary):
    kind, result = call([binary, tmp_path / "bin" / "kubelet", tmp_path / "bin"], tmp_path / "cache" / "sums.json")
    assert kind == "exit" and not result["changed"]
    entry = result["files"][str(binary)]
    assert entry["sha256"] == hashlib.sha256(b"kubeadm build one").hexdigest()
    assert (entry["size"], entry["mode"]) == (17, "0755")
    assert result["missing"] == [str(tmp_path / "bin" / "kubelet"), str(tmp_path / "bin")]
    assert result["hashed"] == [str(binary)]
    assert oct((tmp_path / "cache" / "sums.json").stat().st_mode & 0o777) == "0o600"


def test_an_unchanged_file_is_not_read_again(tmp_path, binary):
    cache = tmp_path / "sums.json"
    call([binary], cache)
    kind, result = call([binary], cache)
    assert (kind, result["hashed"]) == ("exit", [])
    assert result["files"][str(binary)]["sha256"] == hashlib.sha256(b"kubeadm build one").hexdigest()


def test_a_file_changed_with_its_size_and_mtime_set_back_is_hashed_again(tmp_path, binary):
    cache = tmp_path / "sums.json"
    call([binary], cache)
    before = binary.stat()
    binary.write_bytes(b"kubeadm build two")
    os.utime(binary, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (binary.stat().st_size, binary.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    kind, result = call([binary], cache)
    assert result["hashed"] == [str(binary)]
    assert result["files"][str(binary)]["sha256"] == hashlib.sha256(b"kubeadm build two").hexdigest()


def test_a_mode_change_shows_at_once(tmp_path, binary):
    cache = tmp_path / "sums.json"
    call([binary], cache)
    binary.chmod(0o700)
    kind, result = call([binary], cache)
    assert result["files"][str(binary)]["mode"] == "0700"


def test_check_mode_leaves_the_cache_alone(tmp_path, binary):
    cache = tmp_path / "sums.json"
    kind, result = call([binary], cache, check_mode=True)
    assert (kind, result["hashed"]) == ("exit", [str(binary)])
    assert not cache.exists()


@pytest.mark.parametrize("content", ["not json", json.dumps({"version": 99, "files": {}}), json.dumps([1])])
def test_an_unreadable_or_foreign_cache_is_ignored(tmp_path, binary, content):
    cache = tmp_path / "sums.json"
    cache.write_text(content)
    kind, result = call([binary], cache)
    assert (kind, result["hashed"]) == ("exit", [str(binary)])
    assert json.loads(cache.read_text())["version"] == 1


def test_a_forged_cache_entry_for_another_inode_is_not_trusted(tmp_path, binary):
    cache = tmp_path / "sums.json"
    call([binary], cache)
    data = json.loads(cache.read_text())
    data["files"][str(binary)]["sha256"] = "0" * 64
    data["files"][str(binary)]["identity"][1] += 1
    cache.write_text(json.dumps(data))
    kind, result = call([binary], cache)
    assert result["files"][str(binary)]["sha256"] == hashlib.sha256(b"kubeadm build one").hexdigest()


def test_entries_of_removed_files_are_dropped(tmp_path, binary):
    cache = tmp_path / "sums.json"
    other = tmp_path / "bin" / "kubectl"
    other.write_bytes(b"kubectl")
    call([binary, other], cache)
    other.unlink()
    call([binary], cache)
    assert list(json.loads(cache.read_text())["files"]) == [str(binary)]
