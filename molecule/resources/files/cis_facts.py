"""Print, as JSON, the facts the CIS Kubernetes Benchmark (kube-bench, cis-1.12) reads on a node.

Run on the node with its python3 (no third-party module): the flags of the running control-plane
processes and of the kubelet (from /proc/*/cmdline, as kube-bench reads `ps`; etcd's ETCD_* environment
too, which kube-bench reads for the etcd checks), the mode and owner of the files the benchmark names
(and of every file under /etc/kubernetes/pki and /var/lib/cni/networks), the first provider of the
encryption configuration (never a key), and the kubelet's configuration file as text (parsed on the
controller, cis_report.py judges them all).
"""

import grp
import json
import os
import pwd

PROCESSES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kubelet")
FILES = (
    "/etc/kubernetes/manifests/kube-apiserver.yaml",
    "/etc/kubernetes/manifests/kube-controller-manager.yaml",
    "/etc/kubernetes/manifests/kube-scheduler.yaml",
    "/etc/kubernetes/manifests/etcd.yaml",
    "/etc/kubernetes/admin.conf",
    "/etc/kubernetes/super-admin.conf",
    "/etc/kubernetes/scheduler.conf",
    "/etc/kubernetes/controller-manager.conf",
    "/etc/kubernetes/kubelet.conf",
    "/etc/kubernetes/pki/ca.crt",
    "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
    "/var/lib/kubelet/config.yaml",
    "/var/lib/etcd",
    "/etc/kubernetes/encryption/config.yaml",
    "/etc/kubernetes/audit/policy.yaml",
    "/var/log/kubernetes/audit/audit.log",
)


def flags(argv):
    found = {}
    for arg in argv[1:]:
        if arg.startswith("--"):
            name, dummy, value = arg[2:].partition("=")
            found[name] = value
    return found


def environment(pid):
    """etcd reads its settings from ETCD_* variables too (the etcd role's environment file)."""
    try:
        with open("/proc/%s/environ" % pid, "rb") as handle:
            pairs = [part.decode(errors="replace").partition("=") for part in handle.read().split(b"\0") if part]
    except OSError:
        return {}
    return {name: value for name, dummy, value in pairs if name.startswith("ETCD_")}


def processes():
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
        except OSError:
            continue
        name = os.path.basename(argv[0]) if argv else ""
        if name in PROCESSES and name not in found:
            found[name] = flags(argv)
            if name == "etcd":
                found["etcd-environment"] = environment(pid)
    return found


def owner(stat):
    try:
        user = pwd.getpwuid(stat.st_uid).pw_name
    except KeyError:
        user = "UNKNOWN"
    try:
        group = grp.getgrgid(stat.st_gid).gr_name
    except KeyError:
        group = "UNKNOWN"
    return "%s:%s" % (user, group)


def files():
    found = {}
    for path in FILES:
        try:
            stat = os.stat(path)
        except OSError:
            continue
        found[path] = {"mode": "%o" % (stat.st_mode & 0o7777), "owner": owner(stat), "size": stat.st_size}
    return found


def tree(top):
    """Mode and owner of every file and directory under top."""
    found = {}
    for root, dirs, names in os.walk(top):
        for path in [root] + [os.path.join(root, name) for name in names]:
            try:
                stat = os.stat(path)
            except OSError:
                continue
            found[path] = {"mode": "%o" % (stat.st_mode & 0o7777), "owner": owner(stat), "file": os.path.isfile(path)}
    return found


def first_provider(path="/etc/kubernetes/encryption/config.yaml"):
    """The line after `providers:`, as kube-bench's 1.2.28 reads it: the first provider's name only."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ""
    for number, line in enumerate(lines[:-1]):
        if line.strip() == "providers:":
            return "".join(char for char in lines[number + 1] if char.isalpha())
    return ""


def kubelet_config():
    try:
        with open("/var/lib/kubelet/config.yaml", encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


print(json.dumps({"processes": processes(), "files": files(), "kubelet_config": kubelet_config(),
                  "pki": tree("/etc/kubernetes/pki"), "cni": tree("/var/lib/cni/networks"),
                  "encryption_provider": first_provider()}))
