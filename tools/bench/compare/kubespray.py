"""kubespray's inventory and extra vars for the comparison, each setting with its reason.

Only what kubespray's docs or shared/reference/kubespray/README.md beside the checkout (the earlier attempt on
this lab) say is needed: the rest stays at kubespray's defaults. The reasons go into docs/kubespray.md
as a table (settings_table), so anyone can repeat the run.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from bench.compare.bundle import Release, Served
# The kubelet settings every lab node needs (lab/lab.py), given to kubespray's kubelets as lab.py gives them to slipway's.
from lab import LAB_KUBELET_CONFIGURATION

_ROOT = Path(__file__).resolve().parents[3]
# slipway's containerd settings that kubespray's containerd role can be given the same (through
# containerd_extra_runtime_args), read from the role so the two stay alike.
_CONTAINERD_DEFAULTS = _ROOT / "roles" / "containerd" / "defaults" / "main.yml"

GROUPS = ("kube_control_plane", "kube_node", "etcd")
# The playbooks of kubespray's top directory, one per step of the comparison.
PLAYBOOKS = {"create": "cluster.yml", "rerun": "cluster.yml", "scale": "scale.yml", "remove": "remove-node.yml",
             "upgrade": "upgrade-cluster.yml", "reset": "reset.yml"}


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    value: Any
    reason: str
    shown: str = ""  # how the table shows the value when it is long (checksums, lists)


def _digest(value: str) -> str:
    return value if len(value) < 24 else value[:14] + "…"


def _stats_collect_period() -> str:
    """slipway's containerd_stats_collect_period (the containerd role's default)."""
    return str(yaml.safe_load(_CONTAINERD_DEFAULTS.read_text(encoding="utf-8"))["containerd_stats_collect_period"])


def version_settings(release: Release, served: dict[str, Served], registry: str) -> list[Setting]:
    """What a Kubernetes release this kubespray does not know needs (README: Versions)."""
    k = release.kubernetes
    why_checksum = ("a role var, so an extra var to win; validate_inventory asserts kube_version is one of its keys; "
                    "the sha256 of the bundle's file")
    settings = [Setting("kube_version", k, "the bundle's release; this kubespray knows Kubernetes up to 1.36.4")]
    for name in ("kubeadm", "kubelet", "kubectl"):
        settings.append(Setting(f"{name}_checksums", {"amd64": {k: served[name].checksum}}, why_checksum,
                                f"{{amd64: {{{k}: {_digest(served[name].checksum)}}}}}"))
    templated = "not deployed, but the whole downloads dict is templated at once"
    pause = release.images["pause"].rsplit(":", 1)[1]
    coredns = release.images["coredns"].rsplit(":", 1)[1].lstrip("v")
    etcd_tag = release.images["etcd"].rsplit(":", 1)[1]
    settings += [
        Setting("pod_infra_version", pause, "the bundle's pause image; kubespray's pod_infra_supported_versions "
                "stops at 1.36"),
        Setting("etcd_version", release.versions["etcd"], "the bundle's etcd; etcd_supported_versions stops at 1.36 "
                "and picks kubespray's newest 3.6 patch"),
        Setting("etcd_image_repo", f"{registry}/etcd", "the bundle's etcd image as kubeadm names it "
                "(etcd_deployment_type kubeadm; kubespray's default is quay.io/coreos/etcd)"),
        Setting("etcd_image_tag", etcd_tag, "the bundle's etcd image tag (kubespray's default is etcd_version with a v before it)"),
        Setting("coredns_version", coredns, "the bundle's CoreDNS image; coredns_supported_versions stops at 1.36"),
        Setting("snapshot_controller_image_tag", "v7.0.2", "snapshot_controller_supported_versions stops at 1.36; "
                f"{templated} (1.36's value)"),
        Setting("scheduler_plugins_version", 0, f"scheduler_plugins_supported_versions stops at 1.31; {templated} "
                "(0, as its rows say)"),
    ]
    for download, version_key, component, checksum_var in (
            ("crictl", "crictl_version", "crictl", "crictl_binary_checksum"),
            ("cni", "cni_version", "cni_plugins", "cni_binary_checksum"),
            ("etcd", None, "etcd", "etcd_binary_checksum"),
            ("containerd", "containerd_version", "containerd", "containerd_archive_checksum"),
            ("runc", "runc_version", "runc", "runc_binary_checksum"),
            ("nerdctl", "nerdctl_version", "nerdctl", "nerdctl_archive_checksum")):
        if download not in served:
            continue
        if version_key == "nerdctl_version":
            settings.append(Setting(version_key, served[download].version,
                                    "kubespray pins nerdctl 2.3.0, which the Go module proxy does not serve; the "
                                    "newest release it and the checksum database serve that kubespray also lists, "
                                    "built from its Go module"))
        elif version_key:
            settings.append(Setting(version_key, release.versions[component],
                                    f"the bundle's {component} (both installers run the same files)"))
        settings.append(Setting(checksum_var, served[download].checksum,
                                f"the sha256 of the {download} file served (files_repo), repacked from "
                                + ("the build" if download == "nerdctl" else "the bundle"),
                                _digest(served[download].checksum)))
    return settings


def settings(release: Release, served: dict[str, Served], files_url: str, registry: str) -> list[Setting]:
    """Every setting beyond kubespray's defaults, in the order of the table in docs/kubespray.md."""
    offline = "docs/operations/offline-environment.md: files from a files_repo with the original domains on top"
    plain_http = {"host": f"http://{registry}", "capabilities": ["pull", "resolve"], "skip_verify": True}
    mirror = [{"prefix": registry, "mirrors": [plain_http]}]
    flannel, flannel_cni = release.images["flannel"], release.images["flannel-cni-plugin"]
    images = "the bundle's image, in the registry under its own path"
    stats_period = _stats_collect_period()
    result = version_settings(release, served, registry) + [
        Setting("dl_k8s_io_url", f"{files_url}/dl.k8s.io", offline),
        Setting("github_url", f"{files_url}/github.com", offline),
        Setting("kube_image_repo", registry, "offline-environment.md: images from a registry of one's own "
                "(Debian's docker-registry on the lab network, filled with skopeo from the bundle)"),
        Setting("docker_image_repo", registry, "the same, for docker.io images (haproxy)"),
        Setting("containerd_registries_mirrors", mirror,
                "offline-environment.md: the registry is plain HTTP, so containerd and nerdctl are told so (skip_verify)",
                f"{registry} -> http://{registry}, skip_verify"),
        Setting("flannel_image_repo", f"{registry}/{_path(flannel)}", images),
        Setting("flannel_version", _tag(flannel).lstrip("v"), "the bundle's flannel"),
        Setting("flannel_init_image_repo", f"{registry}/{_path(flannel_cni)}", images),
        Setting("flannel_cni_version", _tag(flannel_cni).lstrip("v"), "the bundle's flannel CNI plugin image"),
        Setting("metrics_server_version", release.versions["metrics_server"], "the bundle's metrics-server"),
        Setting("haproxy_image_tag", HAPROXY_TAG, "the haproxy image built FROM scratch with Debian's haproxy and "
                "its libraries (none can be pulled)"),
        # The same cluster as slipway's (README: "The same cluster as slipway's").
        Setting("etcd_deployment_type", "kubeadm", "stacked etcd as slipway's (kubespray's default runs etcd on the hosts)"),
        Setting("kube_network_plugin", "flannel", "slipway's CNI (kubespray's default is calico)"),
        Setting("kube_proxy_mode", "iptables", "slipway's kube-proxy mode (kubespray's default is ipvs, and the lab "
                "kernel has no ip_vs)"),
        Setting("loadbalancer_apiserver_type", "haproxy", "haproxy on the nodes in front of the API servers, as slipway's"),
        Setting("metrics_server_enabled", True, "slipway's cluster has metrics-server (kubespray's default: off)"),
        Setting("enable_nodelocaldns", False, "slipway's cluster has no node-local DNS cache (kubespray's default: on)"),
        Setting("enable_dns_autoscaler", False, "slipway's cluster has no DNS autoscaler (kubespray's default: on)"),
        # Lab node facts: what slipway does for itself in containers.
        Setting("kubelet_fail_cgroup_v1", False, "the lab's hosts are cgroup v1 (kubelet >= 1.35 refuses it otherwise)"),
        Setting("kubeadm_ignore_preflight_errors", ["SystemVerification"], "kubeadm's check of cgroup v1"),
        Setting("kube_proxy_conntrack_max_per_core", 0, "kube-proxy cannot set nf_conntrack_max from a container"),
        Setting("resolvconf_mode", "none", "the nodes' resolv.conf is podman's; nothing outside the lab is resolved"),
        Setting("containerd_base_runtime_spec_rlimit_nofile", 20000, "the lab's nofile limit is 20000 (lab/containers.conf)"),
        Setting("modinfo_br_netfilter", {"rc": 1}, "br_netfilter is built into the lab kernel (no /proc/modules): "
                "kubespray's own not-a-module branch"),
        Setting("eviction_hard", LAB_KUBELET_CONFIGURATION["evictionHard"],
                "the lab's nodes share the host's disk, filled by builds beside them: at kubelet's default thresholds "
                "(15 % free) every node had the disk-pressure taint and evicted the upgrade's web pods; the same "
                "thresholds as lab/lab.py gives slipway's kubelets",
                ", ".join(f"{k}<{v}" for k, v in LAB_KUBELET_CONFIGURATION["evictionHard"].items())),
        Setting("kubelet_config_extra_args", {k: v for k, v in LAB_KUBELET_CONFIGURATION.items() if k != "evictionHard"},
                "the same: image garbage collection measures the host's disk too (lab/lab.py's values)",
                ", ".join(f"{k}: {v}" for k, v in LAB_KUBELET_CONFIGURATION.items() if k != "evictionHard")),
        Setting("containerd_extra_runtime_args", {"restrict_oom_score_adj": True, "stats_collect_period": stats_period},
                "runc cannot set the kubelet's negative oom_score_adj in the lab's containers; and containerd samples "
                f"every container's CPU use as often as slipway's does ({stats_period}; containerd's default, 1s, took "
                "about a third of an idle 5-node cluster's CPU more: \"What an idle lab cluster costs\"); this "
                "kubespray's containerd role puts these keys into the CRI runtime section (the README's "
                "containerd_extra_args would put them above it)",
                f"{{restrict_oom_score_adj: true, stats_collect_period: {stats_period}}}"),
        Setting("control_plane_health_retries", 300,
                "its upgrade rewrites the first control plane's etcd manifest after kubeadm upgrade apply (etcd 3.6.8 "
                "to 3.7.0 here) and restarts the kubelet; on the lab etcd was back after about two minutes, and the "
                "API server's etcd check still failed when kubespray's 60 one-second tries ended (twice, on a quiet "
                "and on a loaded machine): 300 tries, five minutes"),
        # kubespray's sample inventory (its getting-started copies inventory/sample).
        Setting("kubeadm_certificate_key",
                "{{ lookup('password', credentials_dir + '/kubeadm_certificate_key.creds length=64 chars=hexdigits') "
                "| lower }}",
                "as inventory/sample/group_vars/k8s_cluster/k8s-cluster.yml sets it: without it, scale.yml "
                "--limit=w3 failed on the new worker (\"'HostVarsVars object' has no attribute "
                "'kubeadm_certificate_key'\": with flannel and etcd_deployment_type kubeadm a worker downloads the "
                "etcd client certificates with the key, which the limit kept the first control plane from setting)",
                "lookup('password', credentials_dir + '/kubeadm_certificate_key.creds …') (the sample's)"),
        # The harness's own needs.
        Setting("kubeconfig_localhost", True, "the harness's client loop needs admin.conf next to the inventory "
                "(artifacts/), as slipway writes it"),
    ]
    return result


HAPROXY_TAG = "debian"


def haproxy_ref(registry: str) -> str:
    """Where kubespray looks for haproxy with docker_image_repo pointed at the registry."""
    return f"{registry}/library/haproxy:{HAPROXY_TAG}"


def _path(ref: str) -> str:
    """registry.k8s.io/kube-proxy:v1 -> kube-proxy: the path part of a reference, no domain, no tag."""
    name = ref.rsplit(":", 1)[0]
    first = name.split("/", 1)
    return first[1] if len(first) == 2 and ("." in first[0] or ":" in first[0]) else name


def _tag(ref: str) -> str:
    return ref.rsplit(":", 1)[1]


def mirror_ref(registry: str, ref: str) -> str:
    """The reference of a bundle image in the registry: the same path and tag under the registry."""
    return f"{registry}/{_path(ref)}:{_tag(ref)}"


def symbolic(files_port: int = 8780, registry_port: int = 5000) -> list[Setting]:
    """The settings with the bundle's values named instead of given: the table of docs/kubespray.md, which
    holds for any bundle (the run writes the real values into its extra vars files)."""
    components = ("etcd", "cni_plugins", "crictl", "containerd", "runc", "metrics_server")
    release = Release(
        kubernetes="<release>", versions={c: f"<bundle {c}>" for c in components}, binaries={},
        images={n: f"{ref}:<bundle {n} tag>" for n, ref in (
            ("pause", "registry.k8s.io/pause"), ("coredns", "registry.k8s.io/coredns/coredns"),
            ("etcd", "registry.k8s.io/etcd"), ("flannel", "ghcr.io/flannel-io/flannel"),
            ("flannel-cni-plugin", "ghcr.io/flannel-io/flannel-cni-plugin"))},
        image_paths={}, image_tags={})
    served = {name: Served(name, "<sha256 of the served file>") for name in
              ("kubeadm", "kubelet", "kubectl", "etcd", "cni", "crictl", "containerd", "runc")}
    served["nerdctl"] = Served("nerdctl", "<sha256 of the served file>", "<built nerdctl>")
    found = settings(release, served, f"http://GATEWAY:{files_port}", f"GATEWAY:{registry_port}")
    return [dataclasses.replace(s, shown="") if s.shown and "<" in str(s.value) else s for s in found]


def extra_vars(found: list[Setting]) -> dict[str, Any]:
    names = [s.name for s in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"settings given twice: {', '.join(duplicates)}")
    return {s.name: s.value for s in found}


def settings_table(found: list[Setting], skip: tuple[str, ...] = ()) -> str:
    """The Markdown table of docs/kubespray.md: setting, value, why."""
    lines = ["| setting | value | why |", "| --- | --- | --- |"]
    for s in found:
        if s.name in skip:
            continue
        value = s.shown or (yaml.safe_dump(s.value, default_flow_style=True).strip().removesuffix("...").strip()
                            if not isinstance(s.value, str) else s.value)
        lines.append(f"| `{s.name}` | `{value}` | {s.reason} |")
    return "\n".join(lines)


def inventory(lab_inventory: dict[str, Any], leave_out: set[str]) -> dict[str, Any]:
    """kubespray's hosts.yml from the one lab.py wrote: the hosts and their groups, none of slipway's
    variables, without the hosts in `leave_out` (the worker scale.yml adds later)."""
    lab = lab_inventory["all"]
    hosts = {name: dict(spec) for name, spec in lab["hosts"].items() if name not in leave_out}
    children: dict[str, Any] = {}
    for group in GROUPS:
        members = (lab["children"].get(group) or {}).get("hosts") or {}
        children[group] = {"hosts": {name: None for name in members if name in hosts}}
    children["k8s_cluster"] = {"children": {"kube_control_plane": None, "kube_node": None}}
    return {"all": {"hosts": hosts, "children": children}}


def write_yaml(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\n" + yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path
