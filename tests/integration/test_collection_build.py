"""The collection builds and installs offline, and its documentation is readable with ansible-doc."""

from __future__ import annotations

import tarfile

import pytest

from conftest import ROOT, run


@pytest.fixture(name="installed", scope="module")
def fixture_installed(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    built = run([str(ROOT / ".venv/bin/ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out), str(ROOT)])
    assert built.returncode == 0, built.stdout + built.stderr
    tarball = next(out.glob("slipway-cluster-*.tar.gz"))
    target = tmp_path_factory.mktemp("collections")
    # A user's setup: only the installed copy and the collections of the ansible package, not the checkout.
    config = target / "ansible.cfg"
    config.write_text(f"[defaults]\ncollections_path = {target}\n")
    installed = run([str(ROOT / ".venv/bin/ansible-galaxy"), "collection", "install", "--offline", str(tarball)],
                    env={"ANSIBLE_CONFIG": str(config)}, cwd=target)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (target / "ansible_collections/slipway/cluster/MANIFEST.json").is_file()
    return tarball, target


def test_tarball_ships_the_collection_and_not_the_lab(installed):
    tarball = installed[0]
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    for expected in ("README.md", "LICENSE", "meta/runtime.yml", "playbooks/site.yml",
                     "roles/preflight/meta/argument_specs.yml", "plugins/module_utils/_model.py", "MANIFEST.json"):
        assert expected in names, expected
    for prefix in ("tests/", "molecule/", "lab/", "tools/", ".venv/", ".cache/", "bundle/", ".config/", ".mypy_cache/"):
        assert not any(name.startswith(prefix) for name in names), prefix
    # The developer tools' pyproject.toml (the checkout's virtualenv only) is no part of the collection.
    assert "pyproject.toml" not in names


@pytest.mark.parametrize("role,option", [
    ("preflight", "slipway_lb_mode"),
    ("preflight", "preflight_min_memory_mb_control_plane"),
    ("preinstall", "preinstall_kernel_modules"),
    ("containerd", "containerd_registry_mirrors"),
    ("node", "node_kubelet_extra_args"),
    ("control_plane", "control_plane_coredns_upstreams"),
    ("cni", "cni_flannel_backend"),
    ("metrics_server", "metrics_server_kubelet_insecure_tls"),
    ("summary", "summary_kubeconfig"),
])
def test_ansible_doc_documents_the_roles(installed, role, option):
    target = installed[1]
    result = run([str(ROOT / ".venv/bin/ansible-doc"), "-t", "role", f"slipway.cluster.{role}"],
                 env={"ANSIBLE_CONFIG": str(target / "ansible.cfg")}, cwd=target)
    assert result.returncode == 0, result.stderr
    assert option in result.stdout


# Every module the collection ships, so a new one cannot go undocumented.
@pytest.mark.parametrize("module", sorted(path.stem for path in (ROOT / "plugins" / "modules").glob("*.py")
                                          if path.stem != "__init__"))
def test_ansible_doc_documents_the_modules(installed, module):
    target = installed[1]
    result = run([str(ROOT / ".venv/bin/ansible-doc"), f"slipway.cluster.{module}"],
                 env={"ANSIBLE_CONFIG": str(target / "ansible.cfg")}, cwd=target)
    assert result.returncode == 0, result.stderr
    assert "EXAMPLES" in result.stdout and "RETURN VALUES" in result.stdout


# Every filter the collection ships, documented by the YAML file beside its plugin.
@pytest.mark.parametrize("name", sorted(path.stem for path in (ROOT / "plugins" / "filter").glob("*.yml")))
def test_ansible_doc_documents_the_filters(installed, name):
    target = installed[1]
    result = run([str(ROOT / ".venv/bin/ansible-doc"), "-t", "filter", f"slipway.cluster.{name}"],
                 env={"ANSIBLE_CONFIG": str(target / "ansible.cfg")}, cwd=target)
    assert result.returncode == 0, result.stderr
    assert "EXAMPLES" in result.stdout and "RETURN VALUES" in result.stdout


@pytest.mark.parametrize("playbook", ["site", "scale", "remove_node", "reset"])
def test_the_installed_playbooks_parse(installed, playbook):
    target = installed[1]
    result = run([str(ROOT / ".venv/bin/ansible-playbook"), "--syntax-check", "-i", str(ROOT / "inventories/sample/hosts.yml"),
                  f"slipway.cluster.{playbook}"], env={"ANSIBLE_CONFIG": str(target / "ansible.cfg")}, cwd=target)
    assert result.returncode == 0, result.stdout + result.stderr
