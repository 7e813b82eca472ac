# Unit tests of kernel module detection on a fake root: loaded, built in, loadable, missing.
from __future__ import annotations

import gzip
import platform

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils import _kernel

RELEASE = platform.release()


def write(root, path, text=""):
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_boot_config_wins_over_proc_config(tmp_path):
    write(tmp_path, "proc/modules", "")
    write(tmp_path, f"boot/config-{RELEASE}", "CONFIG_VXLAN=y\n")
    assert _kernel.module_states(["vxlan"], root=str(tmp_path)) == {"vxlan": "builtin"}


def test_kernel_with_modules(tmp_path):
    write(tmp_path, "proc/modules", "br_netfilter 32768 0 - Live 0x0\nbridge 311296 1 br_netfilter, Live 0x0\n")
    write(tmp_path, f"lib/modules/{RELEASE}/modules.builtin", "kernel/fs/overlayfs/overlay.ko\n")
    write(tmp_path, f"lib/modules/{RELEASE}/modules.dep", "kernel/net/netfilter/ipvs/ip_vs.ko.zst: kernel/x.ko\n")
    states = _kernel.module_states(["br_netfilter", "overlay", "ip_vs", "vxlan"], root=str(tmp_path))
    assert states == {"br_netfilter": "loaded", "overlay": "builtin", "ip_vs": "available", "vxlan": "missing"}


def test_kernel_without_module_support_uses_sys_module(tmp_path):
    (tmp_path / "sys/module/overlay").mkdir(parents=True)
    assert _kernel.module_states(["overlay"], root=str(tmp_path)) == {"overlay": "builtin"}


def test_sys_module_does_not_count_when_modules_are_supported(tmp_path):
    write(tmp_path, "proc/modules", "")
    (tmp_path / "sys/module/vxlan").mkdir(parents=True)
    assert _kernel.module_states(["vxlan"], root=str(tmp_path)) == {"vxlan": "missing"}


@pytest.mark.parametrize("value,state", [("y", "builtin"), ("m", "missing")])
def test_kernel_config_decides_for_known_symbols(tmp_path, value, state):
    write(tmp_path, "proc/modules", "")
    with gzip.open(tmp_path / "proc/config.gz", "wt") as handle:
        handle.write(f"CONFIG_FOO=y\nCONFIG_BRIDGE_NETFILTER={value}\n")
    assert _kernel.module_states(["br_netfilter"], root=str(tmp_path)) == {"br_netfilter": state}
