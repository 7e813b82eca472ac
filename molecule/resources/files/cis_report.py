#!/usr/bin/env python
"""Judge the facts cis_facts.py read on the nodes by the CIS Kubernetes Benchmark cis-1.12, item by item.

    cis_report.py FACTS.json > REPORT.md

FACTS.json: {"HOST": {"targets": ["master", "etcd", "node"], "facts": <cis_facts.py's output>}, ...}. Each item
follows kube-bench's own definition of it (cfg/cis-1.12: the audit command's source, the test and its comparison):
the collection's own reading of the benchmark, not kube-bench itself. Prints a Markdown table (item, target, host,
result, what was read); PASS or FAIL for an automated item, PASS or WARN for a manual one (kube-bench reports a
manual item as WARN whatever it finds). The last line is a summary: "N PASS, N FAIL, N WARN".
"""
from __future__ import annotations

import json
import sys

import yaml

# kube-bench's test of 4.2.12 and 1.2.29: every suite set must be one of these.
KUBELET_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
APISERVER_SUITES = KUBELET_SUITES | {
    "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"}
MANIFESTS = "/etc/kubernetes/manifests/"


def within(mode: str, allowed: str) -> bool:
    """kube-bench's bitmask comparison: no permission bit beyond the allowed ones."""
    return (int(mode, 8) & ~int(allowed, 8)) == 0


class Report:
    def __init__(self):
        self.rows: list[tuple[str, str, str, str, str]] = []

    def add(self, item: str, target: str, host: str, ok: bool, read: str, manual: bool = False) -> None:
        result = "PASS" if ok else ("WARN" if manual else "FAIL")
        self.rows.append((item, target, host, result, read))

    def file_mode(self, item, target, host, stat, allowed, manual=False):
        if stat is None:
            self.add(item, target, host, True, "no such file: nothing to check", manual)
        else:
            self.add(item, target, host, within(stat["mode"], allowed), "mode %s" % stat["mode"], manual)

    def file_owner(self, item, target, host, stat, manual=False):
        if stat is None:
            self.add(item, target, host, True, "no such file: nothing to check", manual)
        else:
            self.add(item, target, host, stat["owner"] == "root:root", stat["owner"], manual)


def plugins(value: str | None) -> list[str]:
    return [p for p in (value or "").split(",") if p]


def shown(flags: dict, name: str) -> str:
    return "--%s=%s" % (name, flags[name]) if name in flags else "--%s not set" % name


def master(report: Report, host: str, facts: dict) -> None:
    files, procs = facts["files"], facts["processes"]
    target = "master"
    for item, path in (("1.1.1", "kube-apiserver"), ("1.1.3", "kube-controller-manager"), ("1.1.5", "kube-scheduler"),
                       ("1.1.7", "etcd")):
        stat = files.get(MANIFESTS + path + ".yaml")
        report.file_mode(item, target, host, stat, "600")
        report.file_owner("%s.%d" % (item.rsplit(".", 1)[0], int(item.rsplit(".", 1)[1]) + 1), target, host, stat)
    cni_files = {path: stat for path, stat in facts.get("cni", {}).items() if stat.get("file")}
    wide = sorted(path for path, stat in cni_files.items() if not within(stat["mode"], "600"))
    report.add("1.1.9", target, host, not wide, "%d files under /var/lib/cni/networks%s" % (
        len(cni_files), ", wider than 600: " + ", ".join(wide[:3]) if wide else ""), manual=True)
    report.add("1.1.10", target, host, all(s["owner"] == "root:root" for s in cni_files.values()),
               "owners " + ",".join(sorted({s["owner"] for s in cni_files.values()}) or ["none"]), manual=True)
    data = files.get("/var/lib/etcd")
    if "etcd" in procs or data is not None:
        report.add("1.1.11", target, host, data is not None and within(data["mode"], "700"),
                   "/var/lib/etcd mode %s" % (data or {}).get("mode", "missing"))
        report.add("1.1.12", target, host, (data or {}).get("owner") == "etcd:etcd",
                   "/var/lib/etcd %s" % (data or {}).get("owner", "missing"))
    admins = [files.get(p) for p in ("/etc/kubernetes/admin.conf", "/etc/kubernetes/super-admin.conf") if p in files]
    report.add("1.1.13", target, host, all(within(s["mode"], "600") for s in admins),
               "modes " + ", ".join(s["mode"] for s in admins))
    report.add("1.1.14", target, host, all(s["owner"] == "root:root" for s in admins),
               "owners " + ", ".join(s["owner"] for s in admins))
    for item, path in (("1.1.15", "scheduler.conf"), ("1.1.17", "controller-manager.conf")):
        stat = files.get("/etc/kubernetes/" + path)
        report.file_mode(item, target, host, stat, "600")
        report.file_owner(item[:-2] + str(int(item[-2:]) + 1), target, host, stat)
    pki = facts.get("pki", {})
    report.add("1.1.19", target, host, bool(pki) and all(s["owner"] == "root:root" for s in pki.values()),
               "%d paths, owners %s" % (len(pki), ",".join(sorted({s["owner"] for s in pki.values()}))))
    crts = {p: s for p, s in pki.items() if p.endswith(".crt")}
    keys = {p: s for p, s in pki.items() if p.endswith(".key")}
    report.add("1.1.20", target, host, all(within(s["mode"], "644") for s in crts.values()),
               "%d .crt, modes %s" % (len(crts), ",".join(sorted({s["mode"] for s in crts.values()}))), manual=True)
    report.add("1.1.21", target, host, all(within(s["mode"], "600") for s in keys.values()),
               "%d .key, modes %s" % (len(keys), ",".join(sorted({s["mode"] for s in keys.values()}))), manual=True)

    api = procs.get("kube-apiserver", {})
    enabled, disabled = plugins(api.get("enable-admission-plugins")), plugins(api.get("disable-admission-plugins"))
    modes = plugins(api.get("authorization-mode"))
    checks = [
        ("1.2.1", api.get("anonymous-auth") == "false", shown(api, "anonymous-auth"), True),
        ("1.2.2", "token-auth-file" not in api, shown(api, "token-auth-file"), False),
        ("1.2.3", "DenyServiceExternalIPs" in enabled, shown(api, "enable-admission-plugins"), True),
        ("1.2.4", "kubelet-client-certificate" in api and "kubelet-client-key" in api, shown(api, "kubelet-client-key"), False),
        ("1.2.5", bool(api.get("kubelet-certificate-authority")), shown(api, "kubelet-certificate-authority"), False),
        ("1.2.6", "AlwaysAllow" not in modes, shown(api, "authorization-mode"), False),
        ("1.2.7", "Node" in modes, shown(api, "authorization-mode"), False),
        ("1.2.8", "RBAC" in modes, shown(api, "authorization-mode"), False),
        ("1.2.9", "EventRateLimit" in enabled, shown(api, "enable-admission-plugins"), True),
        ("1.2.10", "AlwaysAdmit" not in enabled, shown(api, "enable-admission-plugins"), False),
        ("1.2.11", "AlwaysPullImages" in enabled, shown(api, "enable-admission-plugins"), True),
        ("1.2.12", "ServiceAccount" not in disabled, shown(api, "disable-admission-plugins"), False),
        ("1.2.13", "NamespaceLifecycle" not in disabled, shown(api, "disable-admission-plugins"), False),
        ("1.2.14", "NodeRestriction" in enabled, shown(api, "enable-admission-plugins"), False),
        ("1.2.15", api.get("profiling") == "false", shown(api, "profiling"), False),
        ("1.2.16", bool(api.get("audit-log-path")), shown(api, "audit-log-path"), False),
        ("1.2.17", int(api.get("audit-log-maxage") or 0) >= 30, shown(api, "audit-log-maxage"), False),
        ("1.2.18", int(api.get("audit-log-maxbackup") or 0) >= 10, shown(api, "audit-log-maxbackup"), False),
        ("1.2.19", int(api.get("audit-log-maxsize") or 0) >= 100, shown(api, "audit-log-maxsize"), False),
        ("1.2.20", False, shown(api, "request-timeout") + " (a manual item: kube-bench has no test)", True),
        ("1.2.21", api.get("service-account-lookup", "true") == "true", shown(api, "service-account-lookup"), False),
        ("1.2.22", bool(api.get("service-account-key-file")), shown(api, "service-account-key-file"), False),
        ("1.2.23", "etcd-certfile" in api and "etcd-keyfile" in api, shown(api, "etcd-certfile"), False),
        ("1.2.24", "tls-cert-file" in api and "tls-private-key-file" in api, shown(api, "tls-cert-file"), False),
        ("1.2.25", bool(api.get("client-ca-file")), shown(api, "client-ca-file"), False),
        ("1.2.26", bool(api.get("etcd-cafile")), shown(api, "etcd-cafile"), False),
        ("1.2.27", bool(api.get("encryption-provider-config")), shown(api, "encryption-provider-config"), True),
        ("1.2.28", facts.get("encryption_provider") in ("aescbc", "kms", "secretbox"),
         "first provider: %s" % (facts.get("encryption_provider") or "none"), True),
        ("1.2.29", bool(api.get("tls-cipher-suites")) and set(plugins(api.get("tls-cipher-suites"))) <= APISERVER_SUITES,
         "%d suites" % len(plugins(api.get("tls-cipher-suites"))), True),
        ("1.2.30", api.get("service-account-extend-token-expiration") == "false",
         shown(api, "service-account-extend-token-expiration"), False),
    ]
    kcm = procs.get("kube-controller-manager", {})
    checks += [
        ("1.3.1", "terminated-pod-gc-threshold" in kcm, shown(kcm, "terminated-pod-gc-threshold"), True),
        ("1.3.2", kcm.get("profiling") == "false", shown(kcm, "profiling"), False),
        ("1.3.3", kcm.get("use-service-account-credentials") not in (None, "false"), shown(kcm, "use-service-account-credentials"), False),
        ("1.3.4", bool(kcm.get("service-account-private-key-file")), shown(kcm, "service-account-private-key-file"), False),
        ("1.3.5", bool(kcm.get("root-ca-file")), shown(kcm, "root-ca-file"), False),
        ("1.3.6", "RotateKubeletServerCertificate=false" not in kcm.get("feature-gates", ""), shown(kcm, "feature-gates"), False),
        ("1.3.7", kcm.get("bind-address", "127.0.0.1") == "127.0.0.1", shown(kcm, "bind-address"), False),
    ]
    sched = procs.get("kube-scheduler", {})
    checks += [
        ("1.4.1", sched.get("profiling") == "false", shown(sched, "profiling"), False),
        ("1.4.2", sched.get("bind-address", "127.0.0.1") == "127.0.0.1", shown(sched, "bind-address"), False),
        ("3.2.1", bool(api.get("audit-policy-file")), shown(api, "audit-policy-file"), True),
    ]
    for item, ok, read, manual in checks:
        report.add(item, "master" if not item.startswith("3.") else "controlplane", host, ok, read, manual)


def etcd(report: Report, host: str, facts: dict) -> None:
    flags = dict(facts["processes"].get("etcd", {}))
    for name, value in facts["processes"].get("etcd-environment", {}).items():
        flags.setdefault(name[len("ETCD_"):].lower().replace("_", "-"), value)
    for item, ok, read, manual in (
        ("2.1", "cert-file" in flags and "key-file" in flags, shown(flags, "cert-file"), False),
        ("2.2", flags.get("client-cert-auth") == "true", shown(flags, "client-cert-auth"), False),
        ("2.3", flags.get("auto-tls", "false") == "false", shown(flags, "auto-tls"), False),
        ("2.4", "peer-cert-file" in flags and "peer-key-file" in flags, shown(flags, "peer-cert-file"), False),
        ("2.5", flags.get("peer-client-cert-auth") == "true", shown(flags, "peer-client-cert-auth"), False),
        ("2.6", flags.get("peer-auto-tls", "false") == "false", shown(flags, "peer-auto-tls"), False),
        ("2.7", bool(flags.get("trusted-ca-file")), shown(flags, "trusted-ca-file"), True),
    ):
        report.add(item, "etcd", host, ok, read, manual)


def node(report: Report, host: str, facts: dict) -> None:
    files, procs = facts["files"], facts["processes"]
    target = "node"
    service = files.get("/etc/systemd/system/kubelet.service.d/10-kubeadm.conf")
    report.file_mode("4.1.1", target, host, service, "600")
    report.file_owner("4.1.2", target, host, service)
    report.add("4.1.3", target, host, True, "no kube-proxy kubeconfig on the host (kube-proxy's is in its pod)", True)
    report.add("4.1.4", target, host, True, "no kube-proxy kubeconfig on the host (kube-proxy's is in its pod)", True)
    kubeconfig = files.get("/etc/kubernetes/kubelet.conf")
    report.file_mode("4.1.5", target, host, kubeconfig, "600")
    report.file_owner("4.1.6", target, host, kubeconfig)
    ca = files.get("/etc/kubernetes/pki/ca.crt")
    report.file_mode("4.1.7", target, host, ca, "644", manual=True)
    report.file_owner("4.1.8", target, host, ca, manual=True)
    config_file = files.get("/var/lib/kubelet/config.yaml")
    report.file_mode("4.1.9", target, host, config_file, "600")
    report.file_owner("4.1.10", target, host, config_file)
    kubelet = procs.get("kubelet", {})
    config = yaml.safe_load(facts.get("kubelet_config") or "{}") or {}
    auth = config.get("authentication", {})
    suites = config.get("tlsCipherSuites") or []
    for item, ok, read, manual in (
        ("4.2.1", auth.get("anonymous", {}).get("enabled") is False, "anonymous.enabled: %s" % auth.get("anonymous", {}).get("enabled"), False),
        ("4.2.2", config.get("authorization", {}).get("mode") != "AlwaysAllow", "authorization.mode: %s" % config.get("authorization", {}).get("mode"), False),
        ("4.2.3", bool(auth.get("x509", {}).get("clientCAFile")), "x509.clientCAFile: %s" % auth.get("x509", {}).get("clientCAFile"), False),
        ("4.2.4", config.get("readOnlyPort", 0) == 0, "readOnlyPort: %s" % config.get("readOnlyPort", "not set"), True),
        ("4.2.5", str(config.get("streamingConnectionIdleTimeout", "4h")) not in ("0", "0s"),
         "streamingConnectionIdleTimeout: %s" % config.get("streamingConnectionIdleTimeout", "not set"), True),
        ("4.2.6", config.get("makeIPTablesUtilChains", True) is True, "makeIPTablesUtilChains: %s" % config.get("makeIPTablesUtilChains", "not set"), False),
        ("4.2.7", "hostname-override" not in kubelet, shown(kubelet, "hostname-override"), True),
        ("4.2.8", config.get("eventRecordQPS", 0) >= 0, "eventRecordQPS: %s" % config.get("eventRecordQPS", "not set"), True),
        ("4.2.9", bool(config.get("tlsCertFile")) and bool(config.get("tlsPrivateKeyFile")),
         "tlsCertFile: %s (serverTLSBootstrap: %s)" % (config.get("tlsCertFile", "not set"), config.get("serverTLSBootstrap")), True),
        ("4.2.10", config.get("rotateCertificates", True) is True, "rotateCertificates: %s" % config.get("rotateCertificates", "not set"), False),
        ("4.2.11", (config.get("featureGates") or {}).get("RotateKubeletServerCertificate", True) is not False,
         "featureGates: %s" % (config.get("featureGates") or "not set"), True),
        ("4.2.12", bool(suites) and set(suites) <= KUBELET_SUITES, "%d suites" % len(suites), True),
        ("4.2.13", "podPidsLimit" in config, "podPidsLimit: %s" % config.get("podPidsLimit", "not set"), True),
        ("4.2.14", "seccompDefault" in config, "seccompDefault: %s" % config.get("seccompDefault", "not set"), True),
    ):
        report.add(item, target, host, ok, read, manual)
    proxy = procs.get("kube-proxy", {})
    report.add("4.3.1", target, host, proxy.get("metrics-bind-address", "127.0.0.1").startswith("127.0.0.1"),
               shown(proxy, "metrics-bind-address") + " (its config file is in its pod, not on the host)")


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        hosts = json.load(handle)
    report = Report()
    for host in sorted(hosts):
        targets, facts = hosts[host]["targets"], hosts[host]["facts"]
        if "master" in targets:
            master(report, host, facts)
        if "etcd" in targets:
            etcd(report, host, facts)
        if "node" in targets:
            node(report, host, facts)
    order = {"master": 0, "controlplane": 1, "etcd": 2, "node": 3}
    print("| item | target | host | result | read |")
    print("| --- | --- | --- | --- | --- |")

    def key(row):
        return (order[row[1]], [int(part) for part in row[0].split(".")], row[2])

    for row in sorted(report.rows, key=key):
        print("| %s |" % " | ".join(cell.replace("|", "\\|") for cell in row))
    counts = {result: sum(1 for row in report.rows if row[3] == result) for result in ("PASS", "FAIL", "WARN")}
    print()
    print("%(PASS)d PASS, %(FAIL)d FAIL, %(WARN)d WARN" % counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
