# Unit tests of slipway.cluster.install_files on real files: from the pack or the staged copies, checked by sha256,
# renamed into place (a running program keeps its file), the pack removed only when everything went in.
from __future__ import annotations

import grp
import hashlib
import io
import os
import pwd
import tarfile

import pytest

from ansible.module_utils import basic

from ansible_collections.slipway.cluster.plugins.modules import install_files
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import _exit_json, _fail_json, run_main

KUBEADM = b"kubeadm v1.37.1" * 1000
KUBELET = b"kubelet v1.37.1"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def _exits(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)


def make_pack(path, contents):
    with tarfile.open(path, "w:") as tar:
        for data in contents:
            info = tarfile.TarInfo(sha(data))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def call(files, check_mode=False, **params):
    return run_main(install_files.main, {"files": files, "owner": pwd.getpwuid(os.getuid()).pw_name,
                                         "group": grp.getgrgid(os.getgid()).gr_name,
                                         "_ansible_check_mode": check_mode, **params})


def test_from_the_pack_and_the_staged_copies(tmp_path):
    (tmp_path / "bin").mkdir()
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / sha(KUBELET)).write_bytes(KUBELET)
    pack = make_pack(staging / "binaries.tar", [KUBEADM])
    old = tmp_path / "bin" / "kubeadm"
    old.write_bytes(b"old kubeadm")
    running = open(old, "rb")  # pylint: disable=consider-using-with
    files = [{"dest": str(old), "sha256": sha(KUBEADM), "name": "kubeadm", "src": "/controller/bundle/bin/kubeadm"},
             {"dest": str(tmp_path / "bin" / "kubelet"), "sha256": sha(KUBELET), "mode": "0750"}]
    kind, result = call(files, pack=str(pack), staged_dir=str(staging), staged=[sha(KUBELET)])
    assert kind == "exit" and result["changed"]
    assert result["installed"] == [str(old), str(tmp_path / "bin" / "kubelet")]
    assert old.read_bytes() == KUBEADM and running.read() == b"old kubeadm"  # renamed over, not written into
    running.close()
    assert oct(old.stat().st_mode & 0o777) == "0o755"
    assert oct((tmp_path / "bin" / "kubelet").stat().st_mode & 0o777) == "0o750"
    assert not pack.exists() and (staging / sha(KUBELET)).exists()
    assert sorted(p.name for p in (tmp_path / "bin").iterdir()) == ["kubeadm", "kubelet"]


def test_a_staged_copy_not_known_intact_is_not_used(tmp_path):
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / sha(KUBELET)).write_bytes(b"damaged")
    pack = make_pack(tmp_path / "binaries.tar", [KUBELET])
    dest = tmp_path / "kubelet"
    kind, result = call([{"dest": str(dest), "sha256": sha(KUBELET)}], pack=str(pack), staged_dir=str(staging), staged=[])
    assert kind == "exit" and dest.read_bytes() == KUBELET


def test_content_that_is_not_the_sha256_is_not_installed(tmp_path):
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / sha(KUBELET)).write_bytes(b"changed since it was read")
    dest = tmp_path / "kubelet"
    dest.write_bytes(b"the running one")
    kind, result = call([{"dest": str(dest), "sha256": sha(KUBELET)}], staged_dir=str(staging), staged=[sha(KUBELET)])
    assert kind == "fail" and "not installed" in result["msg"] and sha(KUBELET) in result["msg"]
    assert dest.read_bytes() == b"the running one"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".kubelet")] == []


def test_a_member_missing_from_the_pack_fails_and_keeps_the_pack(tmp_path):
    pack = make_pack(tmp_path / "binaries.tar", [KUBEADM])
    kind, result = call([{"dest": str(tmp_path / "kubelet"), "sha256": sha(KUBELET)}], pack=str(pack))
    assert kind == "fail" and f"has no file {sha(KUBELET)}" in result["msg"] and pack.exists()


def test_neither_staged_nor_packed(tmp_path):
    kind, result = call([{"dest": str(tmp_path / "kubelet"), "sha256": sha(KUBELET)}])
    assert kind == "fail" and "neither staged nor in a pack" in result["msg"]


@pytest.mark.parametrize("entry", [{"dest": "relative/kubelet", "sha256": "x"}, {"dest": "/usr/bin/x"}])
def test_entries_need_an_absolute_dest_and_a_sha256(entry):
    kind, result = call([entry])
    assert kind == "fail" and "absolute dest and its sha256" in result["msg"]


def test_check_mode_names_what_would_be_installed_and_writes_nothing(tmp_path):
    pack = make_pack(tmp_path / "binaries.tar", [KUBEADM])
    dest = tmp_path / "kubeadm"
    kind, result = call([{"dest": str(dest), "sha256": sha(KUBEADM)}], check_mode=True, pack=str(pack))
    assert kind == "exit" and result["changed"] and result["installed"] == [str(dest)]
    assert not dest.exists() and pack.exists()


def test_nothing_to_install_changes_nothing(tmp_path):
    kind, result = call([])
    assert kind == "exit" and not result["changed"]
