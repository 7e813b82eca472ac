# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Kernel module state that also holds on kernels built without module support.

A module built into the kernel counts as loaded: it is listed in modules.builtin, present
under /sys/module on a kernel without /proc/modules, or enabled as =y in the kernel config.
"""

from __future__ import annotations

import gzip
import os
import platform

# Configuration symbols of the modules Kubernetes nodes use, for kernels without modules.builtin.
CONFIG_SYMBOLS = {
    "overlay": "CONFIG_OVERLAY_FS",
    "br_netfilter": "CONFIG_BRIDGE_NETFILTER",
    "bridge": "CONFIG_BRIDGE",
    "nf_conntrack": "CONFIG_NF_CONNTRACK",
    "vxlan": "CONFIG_VXLAN",
    "veth": "CONFIG_VETH",
    "ip_tables": "CONFIG_IP_NF_IPTABLES",
    "nf_tables": "CONFIG_NF_TABLES",
    "ip_vs": "CONFIG_IP_VS",
}


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _kernel_config(root: str, release: str) -> str:
    text = _read(os.path.join(root, f"boot/config-{release}"))
    if text:
        return text
    try:
        with gzip.open(os.path.join(root, "proc/config.gz"), "rt") as handle:
            return handle.read()
    except OSError:
        return ""


def _names_in(listing: str) -> set[str]:
    names = set()
    for line in listing.splitlines():
        path = line.split(":", 1)[0].strip()
        base = os.path.basename(path)
        for suffix in (".ko", ".ko.xz", ".ko.zst", ".ko.gz"):
            if base.endswith(suffix):
                names.add(base[: -len(suffix)].replace("-", "_"))
    return names


def module_states(names: list[str], root: str = "/") -> dict[str, str]:
    """Map each module name to ``loaded``, ``builtin``, ``available`` or ``missing``."""
    release = platform.release()

    def join(*parts: str) -> str:
        return os.path.join(root, *parts)

    proc_modules = _read(join("proc/modules"))
    loaded = {line.split()[0] for line in proc_modules.splitlines() if line.strip()}
    has_proc_modules = os.path.exists(join("proc/modules"))
    builtin = _names_in(_read(join("lib/modules", release, "modules.builtin")))
    available = _names_in(_read(join("lib/modules", release, "modules.dep")))
    config = None
    states = {}
    for name in names:
        key = name.replace("-", "_")
        if key in loaded:
            states[name] = "loaded"
        elif key in builtin or (not has_proc_modules and os.path.isdir(join("sys/module", key))):
            states[name] = "builtin"
        elif key in available:
            states[name] = "available"
        else:
            if config is None:
                config = "\n" + _kernel_config(root, release)
            symbol = CONFIG_SYMBOLS.get(key)
            states[name] = "builtin" if symbol and f"\n{symbol}=y\n" in config else "missing"
    return states
