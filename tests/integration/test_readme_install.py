"""README's "Using it on your machines" commands, run as written in a fresh copy of the checkout (no
`make collection` link) with a home of its own: the installed copy is the one ansible-playbook runs."""

from __future__ import annotations

import os
import re
import subprocess

from conftest import ROOT, VENV_BIN


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Using it on your machines", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in section.splitlines() if line.startswith(("ansible-galaxy ", "ansible-playbook slipway."))]


def test_the_readmes_install_commands_work_inside_a_fresh_checkout(tmp_path):
    commands = readme_commands()
    assert [command.split()[0] for command in commands] == ["ansible-galaxy", "ansible-playbook"], commands
    checkout = tmp_path / "slipway"
    checkout.mkdir()
    # The files git would ship (tracked and new, not ignored): a fresh clone, without .venv or .cache.
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    subprocess.run(["rsync", "-a", "--from0", "--files-from=-", "./", f"{checkout}/"], cwd=ROOT, check=True,
                   input="\0".join(name for name in files if name).encode())
    assert not (checkout / ".cache").exists()
    home = tmp_path / "home"
    home.mkdir()
    # A user's shell: the project's Ansible on PATH, no ANSIBLE_CONFIG (ansible.cfg of the current directory).
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(HOME=str(home), PATH=f"{VENV_BIN}:{env['PATH']}", ANSIBLE_NOCOLOR="1")

    def shell(command):
        return subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True,
                              timeout=600, check=False)

    installed = shell(commands[0])
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (home / ".ansible/collections/ansible_collections/slipway/cluster/MANIFEST.json").is_file()
    assert "not part of the configured Ansible collections paths" not in installed.stdout + installed.stderr

    playbook = commands[1].replace("inventories/mycluster/hosts.yml", "inventories/sample/hosts.yml")
    parsed = shell(playbook + " --syntax-check")
    assert parsed.returncode == 0, parsed.stdout + parsed.stderr
    # A model-only run: a version that was never released stops it before any host is contacted, and the task
    # that stops it is the installed copy's.
    result = shell(playbook + " -e slipway_kubernetes_version=1.37.99")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "slipway_kubernetes_version: 1.37.99 is not a Kubernetes release this collection knows of" in output, output
    origins = set(re.findall(r"Origin: (\S+?)/roles/preflight/tasks/model\.yml", output))
    assert origins == {f"{home}/.ansible/collections/ansible_collections/slipway/cluster"}, output
