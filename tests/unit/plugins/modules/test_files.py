# Unit tests of slipway.cluster.files, on a real temporary directory: what is written, what counts as a
# change, check mode, diff mode, secrets and bad input.
from __future__ import annotations

import grp
import os
import pwd
import stat

import pytest

from ansible.module_utils import basic

from ansible_collections.slipway.cluster.plugins.modules import files
from ansible_collections.slipway.cluster.tests.unit.fixtures.module_runner import _exit_json, _fail_json, run_main

OWNER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


@pytest.fixture(autouse=True)
def _exits(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)


def call(args, check_mode=False, diff=False):
    args = dict(args, owner=OWNER, group=GROUP)
    args["_ansible_check_mode"] = check_mode
    args["_ansible_diff"] = diff
    return run_main(files.main, args)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_creates_directories_with_parents_and_files_then_changes_nothing(tmp_path):
    unit = tmp_path / "etc" / "kubelet.service"
    args = {"directories": [str(tmp_path / "a" / "b"), {"path": str(tmp_path / "secret"), "mode": "0700"}],
            "files": [{"path": str(unit), "content": "[Unit]\n"},
                      {"path": str(tmp_path / "secret" / "key"), "content": "k", "mode": "0600", "secret": True}]}
    kind, result = call(args)
    assert kind == "exit" and result["changed"]
    assert result["changed_paths"] == [str(tmp_path / "a"), str(tmp_path / "a" / "b"), str(tmp_path / "secret"),
                                       str(tmp_path / "etc"), str(unit), str(tmp_path / "secret" / "key")]
    assert result["created_paths"] == result["changed_paths"]
    assert unit.read_text() == "[Unit]\n"
    assert (mode(tmp_path / "a"), mode(tmp_path / "a" / "b"), mode(tmp_path / "secret")) == (0o755, 0o755, 0o700)
    assert (mode(unit), mode(tmp_path / "secret" / "key")) == (0o644, 0o600)
    assert not [name for name in os.listdir(tmp_path / "etc") if name.startswith(".slipway-")]

    kind, again = call(args, diff=True)
    assert (kind, again["changed"], again["changed_paths"], again["diff"]) == ("exit", False, [], [])


def test_changed_content_is_replaced_and_shown_in_the_diff(tmp_path):
    target = tmp_path / "haproxy.cfg"
    target.write_text("old\n")
    target.chmod(0o644)
    kind, result = call({"files": [{"path": str(target), "content": "new\n"}]}, diff=True)
    assert (kind, result["changed_paths"], result["created_paths"]) == ("exit", [str(target)], [])
    assert result["diff"] == [{"before_header": str(target), "after_header": str(target),
                               "before": "old\n", "after": "new\n"}]
    assert target.read_text() == "new\n"


def test_a_mode_that_drifted_is_put_back_with_an_attribute_diff(tmp_path):
    target = tmp_path / "config.toml"
    target.write_text("same\n")
    target.chmod(0o666)
    kind, result = call({"files": [{"path": str(target), "content": "same\n", "mode": "0600"}]}, diff=True)
    assert (kind, result["changed_paths"]) == ("exit", [str(target)])
    assert result["diff"][0]["before"]["mode"] == "0666" and result["diff"][0]["after"]["mode"] == "0600"
    assert mode(target) == 0o600


def test_a_directory_mode_that_drifted_is_put_back(tmp_path):
    directory = tmp_path / "manifests"
    directory.mkdir(mode=0o777)
    directory.chmod(0o777)
    kind, result = call({"directories": [str(directory)]})
    assert (kind, result["changed_paths"], result["created_paths"]) == ("exit", [str(directory)], [])
    assert mode(directory) == 0o755


def test_check_mode_reports_everything_and_touches_nothing(tmp_path):
    existing = tmp_path / "existing"
    existing.write_text("old\n")
    existing.chmod(0o644)
    args = {"directories": [str(tmp_path / "new" / "dir")],
            "files": [{"path": str(tmp_path / "new" / "dir" / "f"), "content": "x\n"},
                      {"path": str(existing), "content": "new\n"}]}
    kind, result = call(args, check_mode=True, diff=True)
    assert kind == "exit" and result["changed"]
    assert result["changed_paths"] == [str(tmp_path / "new"), str(tmp_path / "new" / "dir"),
                                       str(tmp_path / "new" / "dir" / "f"), str(existing)]
    assert result["created_paths"] == result["changed_paths"][:3]
    assert result["diff"][2]["after"] == "x\n" and result["diff"][3]["before"] == "old\n"
    assert not (tmp_path / "new").exists()
    assert existing.read_text() == "old\n"


def test_a_secret_file_never_shows_its_content(tmp_path):
    target = tmp_path / "auth.toml"
    target.write_text("password = 'old-secret'\n")
    target.chmod(0o600)
    kind, result = call({"files": [{"path": str(target), "content": "password = 'new-secret'\n", "mode": "0600",
                                    "secret": True}]}, diff=True)
    assert kind == "exit" and result["changed"]
    assert "secret'" not in repr(result["diff"])
    assert target.read_text() == "password = 'new-secret'\n"
    assert mode(target) == 0o600


def test_a_symlink_is_followed(tmp_path):
    real = tmp_path / "real.conf"
    real.write_text("a\n")
    real.chmod(0o644)
    link = tmp_path / "link.conf"
    link.symlink_to(real)
    kind, result = call({"files": [{"path": str(link), "content": "b\n"}]})
    assert (kind, result["changed_paths"]) == ("exit", [str(real)])
    assert link.is_symlink() and real.read_text() == "b\n"


def test_a_file_where_a_directory_must_be_is_refused_by_name(tmp_path):
    (tmp_path / "plain").write_text("")
    kind, result = call({"directories": [str(tmp_path / "plain")]})
    assert kind == "fail" and result["msg"] == f"{tmp_path / 'plain'} is not a directory; move it away or remove it."


def test_a_directory_where_a_file_must_be_is_refused_by_name(tmp_path):
    (tmp_path / "dir").mkdir()
    kind, result = call({"files": [{"path": str(tmp_path / "dir"), "content": ""}]})
    assert kind == "fail" and result["msg"].startswith(f"{tmp_path / 'dir'} is a directory")


@pytest.mark.parametrize("entry, message", [
    ({"mode": "0755"}, "must be a path or a dictionary with a path"),
    ({"path": "/x", "recurse": True}, "has unknown keys: recurse"),
    (42, "must be a path or a dictionary with a path"),
])
def test_a_bad_directory_entry_is_refused_with_what_to_use(entry, message):
    kind, result = call({"directories": [entry]})
    assert kind == "fail" and message in result["msg"]


def test_a_content_that_fails_its_check_leaves_the_file_as_it_was(tmp_path):
    target = tmp_path / "haproxy.cfg"
    target.write_text("good old\n")
    target.chmod(0o644)
    kind, result = call({"files": [{"path": str(target), "content": "bad new\n", "validate": "grep -q good %s"}]})
    assert kind == "fail"
    assert result["msg"].startswith(f"The new content of {target} failed its check (grep -q good %s, exit 1)")
    assert target.read_text() == "good old\n"
    assert os.listdir(tmp_path) == ["haproxy.cfg"]


def test_a_content_that_passes_its_check_is_written(tmp_path):
    target = tmp_path / "haproxy.cfg"
    kind, result = call({"files": [{"path": str(target), "content": "good new\n", "validate": "grep -q good %s"}]})
    assert (kind, result["changed_paths"]) == ("exit", [str(target)])
    assert target.read_text() == "good new\n"


def test_a_check_command_that_does_not_name_the_file_is_refused(tmp_path):
    kind, result = call({"files": [{"path": str(tmp_path / "f"), "content": "x", "validate": "true"}]})
    assert kind == "fail" and "must hold %s where the file goes" in result["msg"]


def test_a_file_on_the_node_can_be_the_source(tmp_path):
    source = tmp_path / "admin.conf"
    source.write_text("apiVersion: v1\n")
    target = tmp_path / "kube" / "config"
    args = {"files": [{"path": str(target), "src": str(source), "mode": "0600", "secret": True}]}
    kind, result = call(args)
    assert (kind, result["changed_paths"]) == ("exit", [str(tmp_path / "kube"), str(target)])
    assert target.read_text() == "apiVersion: v1\n" and mode(target) == 0o600
    assert call(args)[1]["changed"] is False


def test_a_missing_source_is_named(tmp_path):
    kind, result = call({"files": [{"path": str(tmp_path / "config"), "src": str(tmp_path / "admin.conf")}]})
    assert kind == "fail" and result["msg"] == f"{tmp_path / 'admin.conf'}, the source of {tmp_path / 'config'}, does not exist on the node."


@pytest.mark.parametrize("spec", [{}, {"content": "a", "src": "/etc/hostname"}])
def test_exactly_one_of_content_and_src(tmp_path, spec):
    kind, result = call({"files": [dict(spec, path=str(tmp_path / "f"))]})
    assert kind == "fail"
