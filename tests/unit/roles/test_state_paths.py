# The preflight reads the state of what the roles write (preflight_state_paths), so that a rerun skips a write whose
# file already holds what it would write. A role's default path missing from that list would silently never be
# skipped again: every path the skipping tasks compare against, at the roles' defaults, must be read.
from __future__ import annotations

import os

import yaml

COLLECTION = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def load(*parts: str) -> dict:
    with open(os.path.join(COLLECTION, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def test_every_path_a_rerun_may_skip_writing_is_read_by_the_preflight():
    preflight = load("roles", "preflight", "defaults", "main.yml")
    read = set(preflight["preflight_state_paths"]) | set(preflight["preflight_state_secret_paths"])
    containerd = load("roles", "containerd", "defaults", "main.yml")["containerd_config_dir"]
    control_plane = load("roles", "control_plane", "defaults", "main.yml")
    control_plane_vars = load("roles", "control_plane", "vars", "main.yml")
    encryption_vars = load("roles", "encryption", "vars", "main.yml")
    wanted = {
        load("roles", "preinstall", "defaults", "main.yml")["preinstall_sysctl_file"],
        "/etc/modules-load.d/slipway.conf",
        f"{containerd}/config.toml", f"{containerd}/certs.d", "/etc/crictl.yaml",
        "/etc/systemd/system/containerd.service",
        "/etc/systemd/system/kubelet.service", "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
        "/etc/default/kubelet", "/etc/kubernetes/kubelet.conf", "/var/lib/kubelet/config.yaml",
        "/etc/haproxy/haproxy.cfg",
        control_plane_vars["_control_plane_audit_policy"], control_plane_vars["_control_plane_authentication_config"],
        control_plane["control_plane_audit_log_dir"], control_plane["control_plane_kubeadm_config"],
        control_plane["control_plane_addons_dir"] + "/coredns-config.yml",
        encryption_vars["_encryption_config"], "/etc/kubernetes/admin.conf", "/root/.kube/config",
        "/var/lib/etcd", "/usr/local/sbin/slipway-certs-renew", "/etc/systemd/system/slipway-certs-renew.timer",
        load("roles", "cni", "defaults", "main.yml")["cni_manifest_dir"] + "/flannel.yml",
        load("roles", "metrics_server", "defaults", "main.yml")["metrics_server_manifest_dir"] + "/metrics-server.yml",
    }
    assert sorted(wanted - read) == []


def test_the_encryption_key_is_read_without_its_digest():
    preflight = load("roles", "preflight", "defaults", "main.yml")
    key = load("roles", "encryption", "vars", "main.yml")["_encryption_config"]
    assert key in preflight["preflight_state_secret_paths"]
    assert key not in preflight["preflight_state_paths"]


def test_the_argument_spec_has_the_same_defaults():
    preflight = load("roles", "preflight", "defaults", "main.yml")
    options = load("roles", "preflight", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    for name in ("preflight_state_paths", "preflight_state_secret_paths", "preflight_state_contents", "preflight_state_blocks",
                 "preflight_state_users", "preflight_containerd_address"):
        assert options[name]["default"] == preflight[name], name
