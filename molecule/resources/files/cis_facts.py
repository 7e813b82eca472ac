"""Print, as JSON, the facts the CIS Kubernetes Benchmark (kube-bench, cis-1.12) reads on a node.

Run on the node with its python3 (no third-party module): the flags of the running control-plane
processes and of the kubelet (from /proc/*/cmdline, as kube-bench reads `ps`), the mode and owner of
the files the benchmark names, and the kubelet's configuration file as text (parsed on the controller).
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
        if argv and os.path.basename(argv[0]) in PROCESSES:
            found.setdefault(os.path.basename(argv[0]), flags(argv))
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


def kubelet_config():
    try:
        with open("/var/lib/kubelet/config.yaml", encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


print(json.dumps({"processes": processes(), "files": files(), "kubelet_config": kubelet_config()}))
