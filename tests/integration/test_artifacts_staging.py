"""The artifacts role's binaries staged ahead (tasks_from=stage) and installed later from the node's own copy.

playbooks/upgrade.yml stages the target's binaries on every node at once, before its serial plays; each node's
install then copies them on the node instead of from the controller. This runs the role's real task files with
ansible-playbook on this machine (connection local), with a cluster model whose binaries are installed under a
temporary directory, and reads the files back: the stage copies each missing binary once, the install uses the
staged copy even when the controller's file is gone, removes the copy, and a rerun of either changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from conftest import ROOT, run


def _binary(directory: Path, name: str, content: bytes) -> tuple[Path, str]:
    path = directory / name
    path.write_bytes(content)
    return path, hashlib.sha256(content).hexdigest()


def _setup(tmp_path: Path) -> dict:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    binaries = []
    for name, group in (("kubeadm", "kubernetes"), ("kubelet", "kubernetes"), ("bridge", "cni"), ("etcd", "etcd")):
        src, sha = _binary(bundle, name, f"#!/bin/sh\necho {name} {tmp_path.name}\n".encode())
        binaries.append({"name": name, "group": group, "src": str(src), "sha256": sha,
                         "dest": str(tmp_path / ("opt/cni/bin" if group == "cni" else "usr/local/bin") / name)})
    return {"artifacts": {"source": "bundle", "binaries": binaries, "images": {}},
            "nodes": {"localhost": {"kubernetes": True, "roles": ["worker"]}}}


def _play(tmp_path: Path, model: dict, tasks_from: str, extra: dict | None = None, check: bool = False) -> dict:
    role_vars = {"artifacts_binary_staging_dir": str(tmp_path / "staging"), "artifacts_cni_plugins": ["bridge"],
                 **(extra or {})}
    playbook = [{
        "name": f"artifacts {tasks_from}",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars": {"slipway_cluster": model, "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "module_defaults": {"slipway.cluster.checksums": {"cache": str(tmp_path / "checksums.json")}},
        "tasks": [{"name": "The role's entry point", "ansible.builtin.include_role": {
            "name": "slipway.cluster.artifacts", "tasks_from": tasks_from}, "vars": role_vars}],
    }]
    path = tmp_path / f"{tasks_from}.yml"
    path.write_text(yaml.safe_dump(playbook, sort_keys=False))
    args = [str(ROOT / ".venv/bin/ansible-playbook"), "-i", "localhost,", str(path)] + (["--check"] if check else [])
    result = run(args, env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"}, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    # The json callback's report, between the lines ansible.cfg's profile_tasks callback prints around it.
    text = result.stdout
    report = json.loads(text[text.index("{\n"):text.rindex("\n}") + 2])
    return report["stats"]["localhost"]


def _staged(tmp_path: Path) -> set[str]:
    staging = tmp_path / "staging"
    return {path.name for path in staging.iterdir()} if staging.exists() else set()


def test_stage_then_install_from_the_staged_copies(tmp_path):
    model = _setup(tmp_path)
    by_name = {binary["name"]: binary for binary in model["artifacts"]["binaries"]}
    node_needs = {"kubeadm", "kubelet", "bridge"}  # a worker: no etcd

    # check mode stages nothing
    _play(tmp_path, model, "stage", check=True)
    assert _staged(tmp_path) == set()

    stats = _play(tmp_path, model, "stage")
    assert stats["changed"] > 0
    assert _staged(tmp_path) == {by_name[name]["sha256"] for name in node_needs}
    for name in node_needs:
        assert (tmp_path / "staging" / by_name[name]["sha256"]).read_bytes() == Path(by_name[name]["src"]).read_bytes()
    assert not Path(by_name["kubeadm"]["dest"]).exists(), "staging installed a binary"

    # staging again sends nothing
    assert _play(tmp_path, model, "stage")["changed"] == 0

    # check mode installs nothing and removes no staged copy
    _play(tmp_path, model, "bundle", check=True)
    assert not Path(by_name["kubelet"]["dest"]).exists()
    assert _staged(tmp_path) == {by_name[name]["sha256"] for name in node_needs}

    # The controller's files are gone: only the staged copies can be installed.
    contents = {name: Path(by_name[name]["src"]).read_bytes() for name in by_name}
    for name in node_needs:
        Path(by_name[name]["src"]).unlink()

    # kubeadm alone first (as upgrade.yml does before the drain), then the rest
    _play(tmp_path, model, "bundle", {"artifacts_only": ["kubeadm"]})
    assert Path(by_name["kubeadm"]["dest"]).read_bytes() == contents["kubeadm"]
    assert not Path(by_name["kubelet"]["dest"]).exists()
    assert _staged(tmp_path) == {by_name[name]["sha256"] for name in ("kubelet", "bridge")}

    _play(tmp_path, model, "bundle")
    for name in node_needs:
        dest = Path(by_name[name]["dest"])
        assert dest.read_bytes() == contents[name]
        assert dest.stat().st_mode & 0o777 == 0o755
    assert not Path(by_name["etcd"]["dest"]).exists(), "a worker got etcd"
    assert _staged(tmp_path) == set()

    # at the target: nothing to stage, nothing to install
    assert _play(tmp_path, model, "stage")["changed"] == 0
    assert _play(tmp_path, model, "bundle")["changed"] == 0
    assert _staged(tmp_path) == set()


def test_a_damaged_staged_copy_is_not_installed(tmp_path):
    model = _setup(tmp_path)
    kubelet = next(binary for binary in model["artifacts"]["binaries"] if binary["name"] == "kubelet")
    _play(tmp_path, model, "stage")
    staged = tmp_path / "staging" / kubelet["sha256"]
    staged.write_bytes(b"not the bundle's kubelet\n")

    # The stage sends it again ...
    _play(tmp_path, model, "stage")
    assert staged.read_bytes() == Path(kubelet["src"]).read_bytes()

    # ... and an install that finds it damaged takes the controller's file instead.
    staged.write_bytes(b"damaged again\n")
    _play(tmp_path, model, "bundle")
    assert Path(kubelet["dest"]).read_bytes() == Path(kubelet["src"]).read_bytes()
    assert _staged(tmp_path) == set(), "a staged copy was left behind"


def test_every_role_variable_the_tasks_read_is_defined():
    """Each ``_artifacts_*`` name the task files read is defined in vars/main.yml or in the task's own vars
    (release.yml's archives included, which only upstream and mirror sources reach and no lab run does)."""
    import re

    role = ROOT / "roles" / "artifacts"
    defined = set(yaml.safe_load((role / "vars" / "main.yml").read_text()))
    used = set()
    for path in (role / "tasks").glob("*.yml"):
        used |= set(re.findall(r"(?<![\w])_artifacts_[a-z_]+", path.read_text()))
        # a task's own vars
        defined |= {name for task in yaml.safe_load(path.read_text()) or [] for name in task.get("vars", {})}
    assert used - defined == set()
