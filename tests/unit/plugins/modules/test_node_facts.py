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
