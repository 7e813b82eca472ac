# The containerd role's config.toml (containerd 2.3's format, version 4), hosts.toml and unit, rendered with Ansible's
# templating from the role's own defaults and vars, then read back as TOML: the settings each part of the CRI plugin
# takes in containerd 2, and nothing of the version 2 layout that containerd 2 only converts (or deprecates).
from __future__ import annotations

import os
import tomllib

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible_collections.slipway.cluster.tests.unit.roles.templating import Templar, role_variables, trust_as_template

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "containerd")
IMAGES = "io.containerd.cri.v1.images"
RUNTIME = "io.containerd.cri.v1.runtime"


def node(cap_sys_resource: bool) -> dict:
    return {"slipway_cluster": {"nodes": {"cp1": {"facts": {"cap_sys_resource": cap_sys_resource,
                                                            "services": {"active": [], "enabled": []}}}}},
            "inventory_hostname": "cp1", "ansible_managed": "Ansible managed"}


def render(template: str, **extra) -> str:
    variables = {**role_variables(ROLE), **node(extra.pop("cap_sys_resource", False)), **extra}
    with open(os.path.join(ROLE, "templates", template), encoding="utf-8") as handle:
        text = handle.read()
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(text))


def config(**extra) -> dict:
    return tomllib.loads(render("config.toml.j2", **extra))


def test_defaults_render_containerd_2_3s_format():
    data = config(artifacts_images={"pause": "registry.k8s.io/pause:3.10.2"})
    assert data["version"] == 4
    assert (data["root"], data["state"], data["grpc"]["address"]) == (
        "/var/lib/containerd", "/run/containerd", "/run/containerd/containerd.sock")
    # only the two parts of the CRI plugin: no version 2 table (io.containerd.grpc.v1.cri) left for containerd to convert
    assert set(data["plugins"]) == {IMAGES, RUNTIME}
    images = data["plugins"][IMAGES]
    assert images["pinned_images"] == {"sandbox": "registry.k8s.io/pause:3.10.2"}
    assert (images["snapshotter"], images["max_concurrent_downloads"]) == ("overlayfs", 3)
    # mirrors come from hosts.toml files only; no credentials configured, so no deprecated `configs` table
    assert images["registry"] == {"config_path": "/etc/containerd/certs.d"}
    runtime = data["plugins"][RUNTIME]
    assert runtime["containerd"]["default_runtime_name"] == "runc"
    # CPU samples every 10 s, as the kubelet's cAdvisor reads them, not containerd 2.3's every second
    assert runtime["stats_collect_period"] == "10s"
    runc = runtime["containerd"]["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"] == {"BinaryName": "/usr/local/sbin/runc", "SystemdCgroup": True}
    # bin_dirs: bin_dir is deprecated in containerd 2 (io.containerd.deprecation/cni-bin-dir)
    assert runtime["cni"] == {"bin_dirs": ["/opt/cni/bin"], "conf_dir": "/etc/cni/net.d"}


@pytest.mark.parametrize("setting, cap_sys_resource, expected", [
    ("auto", False, True), ("auto", True, False), ("true", True, True), ("false", False, False)])
def test_restrict_oom_score_adj(setting, cap_sys_resource, expected):
    data = config(containerd_restrict_oom_score_adj=setting, cap_sys_resource=cap_sys_resource)
    assert data["plugins"][RUNTIME]["restrict_oom_score_adj"] is expected


@pytest.mark.parametrize("setting", ["1s", "30s", "1m30s"])
def test_stats_collect_period_is_a_duration_string(setting):
    assert config(containerd_stats_collect_period=setting)["plugins"][RUNTIME]["stats_collect_period"] == setting


def test_settings_reach_their_part_of_the_cri_plugin():
    data = config(containerd_sandbox_image="registry.example:5000/pause:3.10.2", containerd_systemd_cgroup=False,
                  containerd_snapshotter="native", containerd_max_concurrent_downloads=5,
                  containerd_config_dir="/srv/containerd", containerd_runc_binary="/usr/sbin/runc")
    images = data["plugins"][IMAGES]
    assert images["pinned_images"]["sandbox"] == "registry.example:5000/pause:3.10.2"
    assert (images["snapshotter"], images["max_concurrent_downloads"]) == ("native", 5)
    assert images["registry"]["config_path"] == "/srv/containerd/certs.d"
    assert data["plugins"][RUNTIME]["containerd"]["runtimes"]["runc"]["options"] == {
        "BinaryName": "/usr/sbin/runc", "SystemdCgroup": False}


def test_credentials_are_quoted_as_toml_strings():
    password = 'p"a\\ss\'word'
    data = config(containerd_registry_auths={"registry.example:5000": {"username": "u", "password": password},
                                             "docker.io": {"username": "d", "password": "x"}})
    configs = data["plugins"][IMAGES]["registry"]["configs"]
    assert configs["registry.example:5000"]["auth"] == {"username": "u", "password": password}
    assert configs["docker.io"]["auth"] == {"username": "d", "password": "x"}


def test_hosts_toml_of_a_mirrored_insecure_registry():
    text = render("hosts.toml.j2", item="docker.io",
                  containerd_registry_mirrors={"docker.io": ["https://mirror.lab.invalid:5000"]},
                  containerd_insecure_registries=["mirror.lab.invalid:5000"])
    data = tomllib.loads(text)
    assert data["server"] == "https://registry-1.docker.io"
    assert data["host"] == {"https://mirror.lab.invalid:5000": {"capabilities": ["pull", "resolve"],
                                                                "skip_verify": True}}


def test_the_unit_is_upstreams_with_the_installed_binary():
    with open(os.path.join(ROOT, "roles", "containerd", "templates", "containerd.service.j2"), encoding="utf-8") as f:
        assert "ExecStart={{ containerd_binary }}" in f.read()
    text = render("containerd.service.j2")
    assert "ExecStart=/usr/local/bin/containerd\n" in text
    for line in ("Type=notify", "Delegate=yes", "KillMode=process", "OOMScoreAdjust=-999", "LimitNPROC=infinity"):
        assert line + "\n" in text


@pytest.mark.parametrize("stdout, client, server", [
    ("Client:\n  Version:  v2.3.7\n  Revision: \n  Go version: go1.26.8\n\nServer:\n  Version:  1.6.20~ds1\n"
     "  Revision: 1.6.20~ds1-1+b1\n  UUID: 0b3e\n", "v2.3.7", "1.6.20~ds1"),
    ("Client:\n  Version:  v2.3.7\n\nServer:\n  Version:  v2.3.7\n", "v2.3.7", "v2.3.7"),
    ("", "", ""),
])
def test_versions_of_ctr_version(stdout, client, server):
    variables = {**role_variables(ROLE), "__containerd_versions": {"stdout": stdout, "rc": 0}}
    templar = Templar(loader=DataLoader(), variables=variables)
    assert templar.template(trust_as_template("{{ _containerd_client_version }}")) == client
    assert templar.template(trust_as_template("{{ _containerd_server_version }}")) == server


@pytest.mark.parametrize("sys_resource, active, restrict, running", [
    (False, ["containerd.service"], True, True), (True, [], False, False)])
def test_without_the_preflights_facts_the_roles_own_are_used(sys_resource, active, restrict, running):
    """playbooks/upgrade.yml: no host checks ran, tasks/install.yml read the node's capabilities and service."""
    variables = {**role_variables(ROLE), "inventory_hostname": "w1", "slipway_cluster": {"nodes": {"w1": {}}},
                 "__containerd_node_facts": {"node_facts": {"capabilities": {"sys_resource": sys_resource},
                                                            "services": {"active": active, "enabled": active}}}}
    templar = Templar(loader=DataLoader(), variables=variables)
    assert templar.template(trust_as_template("{{ _containerd_restrict_oom | bool }}")) is restrict
    assert templar.template(trust_as_template("{{ _containerd_running | bool }}")) is running
