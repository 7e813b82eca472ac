"""Before any lab node: kubespray's own defaults and checks applied to the extra vars, on this machine only.

A playbook on localhost (connection local, no change made) loads kubespray's kubespray_defaults role
with the extra vars of a release, templates its whole `downloads` dict (as its download role does,
all at once) and runs its validate_inventory role. What a lab run would fail on first, a missing
per-minor value or a checksum for another version, fails here in seconds with kubespray's own message.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

PLAYBOOK = [{
    "name": "kubespray's defaults and inventory checks with the comparison's extra vars",
    "hosts": "all",
    "gather_facts": True,
    "roles": [{"role": "kubespray_defaults"}, {"role": "validate_inventory"}],
    "tasks": [{
        "name": "Every enabled download, templated",
        "ansible.builtin.copy": {
            "dest": "{{ compare_out }}",
            "mode": "0644",
            "content": "{{ downloads | dict2items | selectattr('value.enabled') | items2dict | to_json }}",
        },
    }],
}]


def inventory(groups: tuple[str, ...] = ("kube_control_plane", "kube_node", "etcd")) -> dict:
    """localhost in every group, reached without SSH."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3", "ip": "127.0.0.1"}
    children: dict = {g: {"hosts": {"localhost": None}} for g in groups}
    children["k8s_cluster"] = {"children": {"kube_control_plane": None, "kube_node": None}}
    return {"all": {"hosts": {"localhost": local}, "children": children}}


def downloads(playbook: Path, source: Path, extra: Path, work: Path, env: dict[str, str]) -> dict:
    """kubespray's enabled downloads for the extra vars: {name: {url | repo, tag, checksum, ...}}."""
    work.mkdir(parents=True, exist_ok=True)
    play = work / "check.yml"
    play.write_text(yaml.safe_dump(PLAYBOOK, sort_keys=False), encoding="utf-8")
    hosts = work / "check-hosts.yml"
    hosts.write_text(yaml.safe_dump(inventory(), sort_keys=False), encoding="utf-8")
    out = work / f"downloads-{extra.stem}.json"
    out.unlink(missing_ok=True)
    # kubespray's ansible.cfg caches facts in /tmp: localhost's go to a directory of the check's own.
    run_env = {**env, "ANSIBLE_ROLES_PATH": str(source / "roles"), "ANSIBLE_CONFIG": str(source / "ansible.cfg"),
               "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(work / "check-facts")}
    proc = subprocess.run([str(playbook), "-i", str(hosts), "-e", f"@{extra}", "-e", f"compare_out={out}", str(play)],
                          cwd=source, env=run_env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=False)
    (work / f"check-{extra.stem}.log").write_text(proc.stdout, encoding="utf-8")
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.rstrip().splitlines()[-20:])
        raise RuntimeError(f"kubespray's defaults and checks refuse {extra.name} (log {work}/check-{extra.stem}.log):\n{tail}")
    return dict(json.loads(out.read_text(encoding="utf-8")))


def clean_env(venv_bin: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PATH"] = f"{venv_bin}:{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_bin.parent)
    return env
