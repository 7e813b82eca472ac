"""Versions of everything a bundle holds: the one place to change them.

The Kubernetes version is chosen by the caller (``--kubernetes-version``, default
DEFAULT_KUBERNETES_VERSION). etcd, CoreDNS and pause are never listed here: their tags come
from kubeadm itself (``kubeadm config images list``), so they cannot drift from what kubeadm
deploys. Everything else that a cluster of a given Kubernetes minor needs is pinned per minor in
COMPANIONS.
"""

import re

# The newest Kubernetes release that the Go module proxy serves and that builds with Go 1.26.
DEFAULT_KUBERNETES_VERSION = "v1.37.1"
# The releases a bundle holds by default: the current one (its files at the top of the bundle) and
# the newest patch of the previous minor that the proxy serves (`go list -m k8s.io/kubernetes@v1.36.6`
# answers "not available"), under releases/v1.36.5/, so a cluster of the previous minor can be built
# and upgraded to the current one offline (docs/bundle.md).
BUNDLE_KUBERNETES_VERSIONS = (DEFAULT_KUBERNETES_VERSION, "v1.36.5")

ARCH = "amd64"

# The node's container runtime, one for every release of a bundle (docs/bundle.md). containerd's 2.3
# line is its long-term-support release and the one its RELEASES.md recommends for both releases a
# bundle holds (Kubernetes 1.37: 2.4.0+ or 2.3.0+; 1.36: 2.3.0+ or 2.2.0+; 2.4 is not listed for
# 1.36); v2.3.7 is the newest 2.3 patch the Go module proxy serves (v2.3.8 "not available"). runc is
# v1.5.3, the security patch (CVE-2026-119101) of v1.5.2, the release containerd v2.3.7 pins for its own
# tests (script/setup/runc-version).
CONTAINERD = {"module": "github.com/containerd/containerd/v2", "version": "v2.3.7"}
RUNC = {"module": "github.com/opencontainers/runc", "version": "v1.5.3"}
# The Debian package whose static library runc's seccomp support links (libseccomp-golang, cgo).
DEBIAN_LIBSECCOMP_PACKAGE = "libseccomp-dev"

# Per Kubernetes minor: versions of the components kubeadm does not choose.
#   crictl             cri-tools release of the same minor (cri-tools follows Kubernetes minors)
#   cni_plugins        containernetworking/plugins (bridge, host-local, loopback, portmap, ...)
#   flannel            flannel-io/flannel (flanneld, install-conf)
#   flannel_cni_plugin the flannel CNI plugin image tag that flannel's own kube-flannel.yml of
#                      that flannel release references (used by the download backend)
#   metrics_server     kubernetes-sigs/metrics-server
COMPANIONS = {
    "1.37": {
        "crictl": "v1.37.0",
        "cni_plugins": "v1.9.1",
        "flannel": "v0.28.10",
        "flannel_cni_plugin": "v1.9.1-flannel3",
        "metrics_server": "v0.9.0",
    },
    "1.36": {
        "crictl": "v1.36.0",
        "cni_plugins": "v1.9.1",
        "flannel": "v0.28.10",
        "flannel_cni_plugin": "v1.9.1-flannel3",
        "metrics_server": "v0.9.0",
    },
}

# The flannel CNI plugin's own module (github.com/flannel-io/cni-plugin) is not served by the Go
# module proxy at any version. The source backend therefore builds the flannel CNI plugin from
# the code it was forked from, containernetworking/plugins' plugins/meta/flannel, whose last
# release carrying it is v0.9.1. The image tag says so instead of claiming a flannel-io release.
SOURCE_FLANNEL_CNI_PLUGIN = {
    "module": "github.com/containernetworking/plugins",
    "version": "v0.9.1",
    "package": "github.com/containernetworking/plugins/plugins/meta/flannel",
    "tag": "v0.9.1-cni-plugins",
}

# Image repositories (the name part of each reference, without the tag).
IMAGE_REPOSITORIES = {
    "flannel": "ghcr.io/flannel-io/flannel",
    "flannel-cni-plugin": "ghcr.io/flannel-io/flannel-cni-plugin",
    "metrics-server": "registry.k8s.io/metrics-server/metrics-server",
    # The small image for network checks (sh, wget, nslookup, ping, nc, httpd): busybox,
    # tagged with the busybox version it holds.
    "busybox": "docker.io/library/busybox",
}

# KubeSphere 3.4.1's monitoring and alerting (ThanosRuler) software, built from Go modules by the
# source backend (monitoring.py) once for all the releases of a bundle: it does not depend on the
# Kubernetes release. Per component:
#   module, version   the Go module built, at the version built
#   tag               the image tag of what was built (Prometheus numbers its Go module v0.X.Y for
#                     its release v2.X.Y)
#   kubesphere        the tag KubeSphere 3.4.1's installer pins (kubesphere_images in roles/kubesphere)
#   substitution      why the version built differs from KubeSphere's pin, when it does
KUBESPHERE_MONITORING = {
    "prometheus_operator": {
        "module": "github.com/prometheus-operator/prometheus-operator",
        "version": "v0.55.0", "tag": "v0.55.0", "kubesphere": "v0.55.1",
        "substitution": "the Go module proxy refuses v0.55.1 (403, 'This module version is not "
                        "available'); v0.55.0 is the nearest release it serves, the same minor",
    },
    "prometheus": {"module": "github.com/prometheus/prometheus", "version": "v0.39.1",
                   "tag": "v2.39.1", "kubesphere": "v2.39.1"},
    "alertmanager": {"module": "github.com/prometheus/alertmanager", "version": "v0.23.0",
                     "tag": "v0.23.0", "kubesphere": "v0.23.0"},
    "node_exporter": {"module": "github.com/prometheus/node_exporter", "version": "v1.3.1",
                      "tag": "v1.3.1", "kubesphere": "v1.3.1"},
    "kube_state_metrics": {"module": "k8s.io/kube-state-metrics/v2", "version": "v2.6.0",
                           "tag": "v2.6.0", "kubesphere": "v2.6.0"},
    "kube_rbac_proxy": {"module": "github.com/brancz/kube-rbac-proxy", "version": "v0.11.0",
                        "tag": "v0.11.0", "kubesphere": "v0.11.0"},
    "thanos": {"module": "github.com/thanos-io/thanos", "version": "v0.31.0", "tag": "v0.31.0",
               "kubesphere": "v0.31.0"},
}
# The images, by the bundle's short name (kubesphere_images' key with '-' for '_'): the component
# whose build they hold, and their repository (kubesphere_images' NAMESPACE/NAME on Docker Hub).
KUBESPHERE_MONITORING_IMAGES = {
    "prometheus-operator": ("prometheus_operator", "docker.io/kubesphere/prometheus-operator"),
    "prometheus-config-reloader": ("prometheus_operator",
                                   "docker.io/kubesphere/prometheus-config-reloader"),
    "prometheus": ("prometheus", "docker.io/prom/prometheus"),
    "alertmanager": ("alertmanager", "docker.io/prom/alertmanager"),
    "node-exporter": ("node_exporter", "docker.io/prom/node-exporter"),
    "kube-state-metrics": ("kube_state_metrics", "docker.io/kubesphere/kube-state-metrics"),
    "kube-rbac-proxy": ("kube_rbac_proxy", "docker.io/kubesphere/kube-rbac-proxy"),
    "thanos": ("thanos", "docker.io/thanosio/thanos"),
}
# The manifest's component names of these images: the `artifacts` role imports the images of every
# component named kubesphere_* only on clusters that run KubeSphere (slipway_kubesphere_enabled).
KUBESPHERE_COMPONENT_PREFIX = "kubesphere_"


def kubesphere_monitoring_refs():
    """{image name: full reference} of KubeSphere's monitoring images, at the tags built."""
    return {name: "%s:%s" % (repository, KUBESPHERE_MONITORING[component]["tag"])
            for name, (component, repository) in KUBESPHERE_MONITORING_IMAGES.items()}


# KubeSphere's core, built from the sources in shared/reference/kubesphere (kscore.py): ks-apiserver and
# ks-controller-manager from kubesphere/kubesphere (its vendor tree; the module is not on the Go module proxy) and
# the console from kubesphere/console, at the release KubeSphere's installer 3.4.1 runs.
KUBESPHERE_CORE = {
    "version": "v3.4.1",
    # `git archive` of each repository at tag v3.4.1, and its commit (the sources' README).
    "kubesphere_archive": "kubesphere-v3.4.1.tar.gz",
    "kubesphere_commit": "3e0493a1c5e1c4413a7b77e8b408d428220ed929",
    "console_archive": "console-v3.4.1.tar.gz",
    "console_commit": "7687bf79bb4b27bca857d967e5d418beacf8249c",
    # The console's build tool, from the npm registry (its README asks for yarn 1.22.4 or newer 1.x).
    "yarn": "1.22.22",
    # Node.js of the console image: Debian bookworm's, the same source version as libnode108's candidate.
    "node_package": "nodejs",
}
# The images, by the bundle's short name (kubesphere_images' key with '-' for '_'): manifest component and repository.
KUBESPHERE_CORE_IMAGES = {
    "ks-apiserver": ("ks_apiserver", "docker.io/kubesphere/ks-apiserver"),
    "ks-controller-manager": ("ks_controller_manager", "docker.io/kubesphere/ks-controller-manager"),
    "ks-console": ("ks_console", "docker.io/kubesphere/ks-console"),
}


def kubesphere_core_refs():
    """{image name: full reference} of KubeSphere's core images."""
    return {name: "%s:%s" % (repository, KUBESPHERE_CORE["version"])
            for name, (_component, repository) in KUBESPHERE_CORE_IMAGES.items()}


# Debian bookworm packages for the source backend's images. The version of busybox in the test
# image is the upstream part of the busybox-static package version.
DEBIAN_BUSYBOX_PACKAGE = "busybox-static"
# Everything the netfilter base layer (kube-proxy, flannel) is cut from: iptables (nft and
# legacy), nft, conntrack, and the shared libraries they load. Only files that are needed end up
# in the image (see netfilter.py); a library missing from this list is reported by name.
DEBIAN_NETFILTER_PACKAGES = [
    "iptables",
    "libip4tc2",
    "libip6tc2",
    "libxtables12",
    "libnftnl11",
    "libmnl0",
    "libnetfilter-conntrack3",
    "libnfnetlink0",
    "conntrack",
    "libnetfilter-cthelper0",
    "libnetfilter-queue1",
    "nftables",
    "libnftables1",
    "libjansson4",
    "libgmp10",
    "libedit2",
    "libbsd0",
    "libmd0",
    "libtinfo6",
    "libc6",
    "netbase",
]

_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")


class VersionError(ValueError):
    """A version string that the bundle cannot be built for."""


def parse_kubernetes_version(version):
    """Return (major, minor, patch) of a release version such as ``v1.37.1`` (``1.37.1`` too)."""
    text = version if version.startswith("v") else "v" + version
    match = _VERSION_RE.match(text)
    if not match:
        raise VersionError(
            "Kubernetes version %r is not a release version like v1.37.1" % version)
    return tuple(int(part) for part in match.groups())


def normalize_kubernetes_version(version):
    major, minor, patch = parse_kubernetes_version(version)
    return "v%d.%d.%d" % (major, minor, patch)


def staging_version(kubernetes_version):
    """k8s.io staging modules (k8s.io/api, ...) are tagged v0.Y.Z for Kubernetes v1.Y.Z."""
    _major, minor, patch = parse_kubernetes_version(kubernetes_version)
    return "v0.%d.%d" % (minor, patch)


def companions(kubernetes_version):
    """The pinned companion versions for the minor of ``kubernetes_version``."""
    major, minor, _patch = parse_kubernetes_version(kubernetes_version)
    key = "%d.%d" % (major, minor)
    if key not in COMPANIONS:
        raise VersionError(
            "no companion versions (crictl, CNI plugins, flannel, metrics-server) are pinned for "
            "Kubernetes %s; known minors: %s (tools/bundle/bundler/versions.py)"
            % (key, ", ".join(sorted(COMPANIONS))))
    return dict(COMPANIONS[key])


def debian_upstream_version(debian_version):
    """``1:1.35.0-4+deb12u1+b1`` -> ``1.35.0``: drop the epoch and the Debian revision."""
    text = debian_version.split(":", 1)[-1]
    if "-" in text:
        text = text.rsplit("-", 1)[0]
    return text
