# The running kube-apiserver of this control plane, read from /proc: its flags, when it started and when the
# encryption configuration was last written (seconds since the epoch), the sha256 of that file, and, when it reloads
# the file itself (--encryption-provider-config-automatic-reload), the sha256 of the one it runs with, from its own
# /metrics (apiserver_encryption_config_controller_last_config_info; null when it does not answer), printed as JSON.
# The encryption role runs it with python3 -c (vars/main.yml _encryption_apiserver_probe_argv, used by
# tasks/apiserver_state.yml and the key rotation's wait for a reload). Arguments: the configuration's path, kubectl,
# this node's API server URL. Standard library only: it runs on the node's python3.
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

LOADED = re.compile(r'^apiserver_encryption_config_controller_last_config_info\{[^}]*\bhash="([^"]+)"', re.M)


def apiserver(proc: str = "/proc") -> dict:
    """The first process named kube-apiserver: ``started`` (seconds since the epoch) and ``flags``; {} if none."""
    for pid in filter(str.isdigit, os.listdir(proc)):
        try:
            with open(os.path.join(proc, pid, "comm"), encoding="utf-8") as handle:
                if handle.read().strip() != "kube-apiserver":
                    continue
            with open(os.path.join(proc, pid, "cmdline"), "rb") as handle:
                argv = handle.read().decode(errors="replace").split("\0")
            with open(os.path.join(proc, pid, "stat"), encoding="utf-8") as handle:
                ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        except (OSError, ValueError, IndexError):
            continue
        with open(os.path.join(proc, "stat"), encoding="utf-8") as handle:
            boot = [int(line.split()[1]) for line in handle if line.startswith("btime ")][0]
        return {
            "started": boot + ticks / os.sysconf("SC_CLK_TCK"),
            "flags": dict(arg[2:].partition("=")[::2] for arg in argv if arg.startswith("--")),
        }
    return {}


def config_state(config: str) -> dict:
    """When the configuration was last written and its sha256; {} when it cannot be read."""
    try:
        written = os.stat(config).st_mtime
        with open(config, "rb") as handle:
            return {"config_written": written, "config_hash": "sha256:" + hashlib.sha256(handle.read()).hexdigest()}
    except OSError:
        return {}


def loaded_hash(metrics: str) -> str | None:
    """The hash of the encryption configuration the API server's /metrics says it loaded last."""
    found = LOADED.search(metrics)
    return found.group(1) if found else None


def probe(config: str, kubectl: str, server: str, proc: str = "/proc") -> dict:
    out = apiserver(proc)
    out.update(config_state(config))
    out["reloads"] = out.get("flags", {}).get("encryption-provider-config-automatic-reload") == "true"
    if out["reloads"]:
        out["loaded_hash"] = None
        try:
            metrics = subprocess.run([kubectl, "--kubeconfig", "/etc/kubernetes/admin.conf", "--server", server,
                                      "--request-timeout", "10s", "get", "--raw", "/metrics"],
                                     capture_output=True, text=True, timeout=30, check=True).stdout
            out["loaded_hash"] = loaded_hash(metrics)
        except (OSError, subprocess.SubprocessError):
            pass
    return out


if __name__ == "__main__":
    print(json.dumps(probe(*sys.argv[1:4])))
