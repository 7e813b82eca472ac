"""Tests of lab/lab.py's raising of the machine's inotify limits (the nodes share its kernel)."""

import pathlib

import pytest

import lab


def proc_sys(tmp_path, instances, watches):
    (tmp_path / "fs" / "inotify").mkdir(parents=True)
    (tmp_path / "fs" / "inotify" / "max_user_instances").write_text(f"{instances}\n")
    (tmp_path / "fs" / "inotify" / "max_user_watches").write_text(f"{watches}\n")
    return tmp_path


def read(root, name):
    return int((root / "fs" / "inotify" / name).read_text())


def test_low_limits_are_raised_and_said(tmp_path):
    root = proc_sys(tmp_path, 128, 8192)
    notes = lab.raise_kernel_limits(root)
    assert (read(root, "max_user_instances"), read(root, "max_user_watches")) == (8192, 524288)
    assert notes == [
        "raised fs.inotify.max_user_instances from 128 to 8192 on this machine (the nodes share its kernel)",
        "raised fs.inotify.max_user_watches from 8192 to 524288 on this machine (the nodes share its kernel)",
    ]


def test_higher_limits_are_never_lowered(tmp_path):
    root = proc_sys(tmp_path, 65536, 1048576)
    assert lab.raise_kernel_limits(root) == []
    assert (read(root, "max_user_instances"), read(root, "max_user_watches")) == (65536, 1048576)


def test_a_limit_that_cannot_be_raised_says_what_to_run(tmp_path, monkeypatch):
    root = proc_sys(tmp_path, 128, 524288)

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(pathlib.Path, "write_text", refuse)
    with pytest.raises(lab.LabError, match=r"cannot raise fs.inotify.max_user_instances from 128 to 8192 "
                                           r"\(Permission denied\): run sysctl -w fs.inotify.max_user_instances=8192"):
        lab.raise_kernel_limits(root)
