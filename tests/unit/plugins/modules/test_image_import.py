# Unit tests of slipway.cluster.image_import with a stand-in for ctr (a script that keeps what it read and prints
# what ctr prints): every member imported whole, the file removed only when all went in, check mode reads only.
from __future__ import annotations

import io
import os
import tarfile

import pytest

from ansible.module_utils import basic

from ansible_collections.slipway.cluster.plugins.modules import image_import
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import _exit_json, _fail_json, run_main

# Keeps stdin under $OUT/<n>.in, prints ctr's line with the reference written on the archive's first line, and
# fails for an archive whose first line is "broken".
FAKE_CTR = """#!/bin/sh
n=$(ls "$OUT" | wc -l)
for last; do :; done
cat "$last" > "$OUT/$n.in"
ref=$(head -n 1 "$OUT/$n.in")
echo "$@" > "$OUT/$n.args"
if [ "$ref" = broken ]; then echo "ctr: unexpected EOF" >&2; exit 1; fi
echo "unpacking $ref (sha256:0123)...done"
"""


@pytest.fixture(autouse=True)
def _exits(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)


@pytest.fixture(name="ctr")
def fixture_ctr(tmp_path, monkeypatch):
    out = tmp_path / "ctr-out"
    out.mkdir()
    path = tmp_path / "ctr"
    path.write_text(FAKE_CTR, encoding="utf-8")
    path.chmod(0o755)
    monkeypatch.setenv("OUT", str(out))
    return path, out


def pack(path, members):
    with tarfile.open(path, "w:") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def call(src, ctr, check_mode=False, **params):
    return run_main(image_import.main, {"src": str(src), "ctr": str(ctr), "_ansible_check_mode": check_mode, **params})


def test_every_archive_is_streamed_to_ctr_and_the_file_removed(tmp_path, ctr):
    big = b"registry.k8s.io/kube-apiserver:v1.37.1\n" + os.urandom(3 << 20)
    src = pack(tmp_path / "images.tar", {"kube-apiserver.tar": big, "pause.tar": b"registry.k8s.io/pause:3.10.2\n",
                                         "README": b"not an image"})
    kind, result = call(src, ctr[0], address="/run/c.sock")
    assert kind == "exit" and result["changed"]
    assert result["imported"] == ["kube-apiserver.tar", "pause.tar"]
    assert result["refs"] == ["registry.k8s.io/kube-apiserver:v1.37.1", "registry.k8s.io/pause:3.10.2"]
    assert result["skipped"] == ["README"]
    assert (ctr[1] / "0.in").read_bytes() == big
    args = (ctr[1] / "0.args").read_text().split()
    assert args[:-1] == ["--address", "/run/c.sock", "--namespace", "k8s.io", "images", "import"]
    assert not src.exists() and not os.path.exists(args[-1])
    assert list(tmp_path.glob(".import-*")) == []


def test_a_failed_import_keeps_the_file_and_says_which_archive(tmp_path, ctr):
    src = pack(tmp_path / "images.tar", {"a.tar": b"registry.k8s.io/a:1\n", "b.tar": b"broken\n"})
    kind, result = call(src, ctr[0])
    assert kind == "fail"
    assert "ctr could not import b.tar" in result["msg"] and "unexpected EOF" in result["msg"]
    assert src.exists()


def test_check_mode_names_the_archives_and_imports_nothing(tmp_path, ctr):
    src = pack(tmp_path / "images.tar", {"a.tar": b"registry.k8s.io/a:1\n"})
    kind, result = call(src, ctr[0], check_mode=True)
    assert kind == "exit" and result["changed"] and result["imported"] == ["a.tar"]
    assert list(ctr[1].iterdir()) == [] and src.exists()


def test_check_mode_before_the_copy_reports_a_change(tmp_path, ctr):
    kind, result = call(tmp_path / "missing.tar", ctr[0], check_mode=True)
    assert kind == "exit" and result["changed"] and result["imported"] == []


def test_a_missing_or_damaged_file_is_an_error(tmp_path, ctr):
    kind, result = call(tmp_path / "missing.tar", ctr[0])
    assert kind == "fail" and "is not there" in result["msg"]
    damaged = tmp_path / "damaged.tar"
    damaged.write_bytes(b"\x00not a tar" * 100)
    kind, result = call(damaged, ctr[0])
    assert kind == "fail" and "not a readable tar file" in result["msg"]


def test_keep_the_file_when_asked(tmp_path, ctr):
    src = pack(tmp_path / "images.tar", {"a.tar": b"registry.k8s.io/a:1\n"})
    kind, result = call(src, ctr[0], remove=False)
    assert kind == "exit" and result["changed"] and src.exists()
