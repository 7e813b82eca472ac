# Unit tests of slipway.cluster.node_facts: what counts as an installed package and as swap in /etc/fstab.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.modules.node_facts import fstab_swap, installed_packages

STATUS = """Package: conntrack
Status: install ok installed
Architecture: amd64
Version: 1:1.4.7-1+b2

Package: haproxy
Status: deinstall ok config-files
Architecture: amd64

Package: libc6
Status: hold ok installed
Architecture: amd64

Package: libc6
Status: install ok installed
Architecture: i386

Package: socat
Status: install ok half-configured
Architecture: amd64
"""


def test_only_installed_packages_count_once_each():
    assert installed_packages(STATUS) == ["conntrack", "libc6"]


@pytest.mark.parametrize("status", ["", "\n\n", "Package: broken\n"])
def test_no_dpkg_status_means_no_packages(status):
    assert installed_packages(status) == []


FSTAB = """# /etc/fstab: static file system information.
UUID=0a1b / ext4 errors=remount-ro 0 1
/swapfile none swap sw 0 0
# /dev/sda3 none swap sw 0 0
  UUID=9f8e none swap sw 0 0
/dev/sdb1 /srv/swap ext4 defaults 0 2
# UNCONFIGURED FSTAB FOR BASE SYSTEM
"""


def test_swap_lines_are_the_uncommented_ones_of_type_swap():
    assert fstab_swap(FSTAB) == ["/swapfile none swap sw 0 0", "  UUID=9f8e none swap sw 0 0"]


def test_no_fstab_means_no_swap_lines():
    assert fstab_swap("") == []


SHOW = """ActiveState=active
UnitFileState=enabled

ActiveState=inactive
UnitFileState=

ActiveState=active
UnitFileState=disabled
"""


def test_unit_states_come_in_the_order_asked_one_block_each():
    from ansible_collections.slipway.cluster.plugins.modules.node_facts import parse_unit_states, services

    names = ["containerd.service", "keepalived.service", "chrony"]
    states = parse_unit_states(names, SHOW)
    assert states == {"containerd.service": ("active", "enabled"), "keepalived.service": ("inactive", ""),
                      "chrony": ("active", "disabled")}
    assert services(names[:2], states) == {"active": ["containerd.service"], "enabled": ["containerd.service"]}


def test_no_systemctl_output_means_no_states():
    from ansible_collections.slipway.cluster.plugins.modules.node_facts import parse_unit_states, services

    assert parse_unit_states(["kubelet.service"], "") == {}
    assert services(["kubelet.service"], {}) == {"active": [], "enabled": []}


def test_a_socket_whose_owner_restarted_is_read_again(monkeypatch):
    # The first scan finds port 10257's socket between two controller managers; the second finds its new owner.
    from ansible_collections.slipway.cluster.plugins.modules import node_facts
    scans = iter([
        [{"address": "127.0.0.1", "port": 10257, "process": ""}],
        [{"address": "127.0.0.1", "port": 10257, "process": "kube-controller"}],
    ])
    monkeypatch.setattr(node_facts, "_listening_once", lambda: next(scans))
    assert node_facts.listening(pause=0) == [{"address": "127.0.0.1", "port": 10257, "process": "kube-controller"}]


def test_a_socket_with_no_owner_after_every_attempt_is_reported_without_one(monkeypatch):
    from ansible_collections.slipway.cluster.plugins.modules import node_facts
    calls = []

    def scan():
        calls.append(1)
        return [{"address": "0.0.0.0", "port": 2049, "process": ""}]
    monkeypatch.setattr(node_facts, "_listening_once", scan)
    assert node_facts.listening(attempts=3, pause=0) == [{"address": "0.0.0.0", "port": 2049, "process": ""}]
    assert len(calls) == 3


def test_paths_report_type_mode_owner_and_the_sha256_of_files(tmp_path):
    import hashlib
    import os

    from ansible_collections.slipway.cluster.plugins.modules.node_facts import path_states

    conf = tmp_path / "a.conf"
    conf.write_bytes(b"x = 1\n")
    conf.chmod(0o640)
    link = tmp_path / "link.conf"
    os.symlink(conf, link)
    states = path_states([str(conf), str(tmp_path), str(link), str(tmp_path / "missing")])
    assert states[str(conf)]["type"] == "file"
    assert states[str(conf)]["mode"] == "0640"
    assert states[str(conf)]["sha256"] == hashlib.sha256(b"x = 1\n").hexdigest()
    assert states[str(link)] == states[str(conf)]
    assert states[str(tmp_path)]["type"] == "directory"
    assert "sha256" not in states[str(tmp_path)]
    assert str(tmp_path / "missing") not in states


def test_users_and_groups_that_exist_are_reported():
    from ansible_collections.slipway.cluster.plugins.modules.node_facts import group_states, user_states

    users = user_states(["root", "no-such-user-slipway"])
    assert list(users) == ["root"]
    assert users["root"]["uid"] == 0
    assert group_states(["root", "no-such-group-slipway", "root"]) == ["root"]


CTR_VERSION = """Client:
  Version:  v2.3.7
  Revision: 0a1b2c
  Go version: go1.26.8

Server:
  Version:  v2.3.6
  Revision: 9f8e7d
  UUID: 4b0b
"""


def test_ctr_version_gives_the_client_and_the_server_release():
    from ansible_collections.slipway.cluster.plugins.modules.node_facts import parse_ctr_version

    assert parse_ctr_version(CTR_VERSION) == ("v2.3.7", "v2.3.6")
    # containerd not running: ctr prints its own section only.
    assert parse_ctr_version(CTR_VERSION.split("\n\n", maxsplit=1)[0]) == ("v2.3.7", "")
    assert parse_ctr_version("") == ("", "")


def test_secret_paths_are_reported_without_their_digest(tmp_path):
    from ansible_collections.slipway.cluster.plugins.modules.node_facts import path_states

    key = tmp_path / "config.yaml"
    key.write_text("secret: c2VjcmV0\n")
    key.chmod(0o600)
    states = path_states([], (str(key),))
    assert states[str(key)]["mode"] == "0600"
    assert "sha256" not in states[str(key)]
    assert "sha256" not in path_states([str(key)], (str(key),))[str(key)]


class _Ctr:
    """An AnsibleModule stand-in that answers ctr's two commands, recording what was run."""

    def __init__(self, version: str, images: str | None, ctr: str | None = "/usr/local/bin/ctr"):
        self.version, self.images, self.ctr, self.ran = version, images, ctr, []

    def get_bin_path(self, name, opt_dirs=None):
        return self.ctr if name == "ctr" else None

    def run_command(self, argv):
        self.ran.append(argv)
        if argv[-1] == "version":
            return 0, self.version, ""
        return (1, "", "failed") if self.images is None else (0, self.images, "")


def test_containerd_reports_its_versions_and_the_images_it_lacks():
    from ansible_collections.slipway.cluster.plugins.modules.node_facts import containerd_state

    module = _Ctr(CTR_VERSION, "registry.k8s.io/pause:3.10\nregistry.k8s.io/etcd:3.6.0\n")
    state = containerd_state(module, "/run/containerd/containerd.sock",
                             ["registry.k8s.io/pause:3.10", "registry.k8s.io/coredns:v1.12", "registry.k8s.io/pause:3.10"])
    assert state == {"client_version": "v2.3.7", "server_version": "v2.3.6",
                     "images_missing": ["registry.k8s.io/coredns:v1.12"]}
    assert module.ran[1][:3] == ["/usr/local/bin/ctr", "--address", "/run/containerd/containerd.sock"]


def test_containerd_not_answering_or_not_listing_reports_no_images():
    from ansible_collections.slipway.cluster.plugins.modules.node_facts import containerd_state

    assert containerd_state(_Ctr(CTR_VERSION.split("\n\n", maxsplit=1)[0], ""), "/run/c.sock", ["a"]) == {
        "client_version": "v2.3.7", "server_version": ""}
    assert "images_missing" not in containerd_state(_Ctr(CTR_VERSION, None), "/run/c.sock", ["a"])
    assert containerd_state(_Ctr(CTR_VERSION, "", ctr=None), "/run/c.sock", ["a"]) == {}
    assert containerd_state(_Ctr(CTR_VERSION, ""), "", ["a"]) == {}


def test_contents_are_read_and_a_file_not_there_is_null(tmp_path):
    from ansible_collections.slipway.cluster.plugins.modules.node_facts import file_contents

    config = tmp_path / "config.yaml"
    config.write_text("serverTLSBootstrap: true\n")
    big = tmp_path / "big"
    big.write_bytes(b"x" * (256 * 1024 + 1))
    assert file_contents([str(config), str(tmp_path / "none"), str(tmp_path), str(big)]) == {
        str(config): "serverTLSBootstrap: true\n", str(tmp_path / "none"): None, str(tmp_path): None, str(big): None}
