"""The image references kubeadm deploys, taken from kubeadm itself.

Both backends ask the kubeadm binary they put into the bundle
(`kubeadm config images list --kubernetes-version vX.Y.Z`), so etcd, CoreDNS and pause are
always exactly the tags that kubeadm's constants package names for that release. The source
backend also reads cmd/kubeadm/app/constants/constants.go and refuses to go on when the two
disagree.
"""

import re
import subprocess

from . import dockerarchive

# Short image names kubeadm deploys, in its order.
KUBEADM_IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy",
                  "coredns", "pause", "etcd")


class KubeadmError(Exception):
    pass


def image_name(ref):
    """Short name of a reference: the last path element of its repository."""
    repo, _tag = dockerarchive.split_ref(ref)
    return repo.rsplit("/", 1)[-1]


def parse_images_list(text):
    """{short name: reference} from `kubeadm config images list` output."""
    images = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or " " in line or "/" not in line:
            continue
        try:
            name = image_name(line)
        except ValueError:
            continue
        images[name] = line
    missing = [name for name in KUBEADM_IMAGES if name not in images]
    if missing:
        raise KubeadmError("kubeadm listed no image for %s; output was:\n%s"
                           % (", ".join(missing), text))
    return {name: images[name] for name in KUBEADM_IMAGES}


def list_images(kubeadm, kubernetes_version, run=subprocess.run):
    """Run the kubeadm binary (offline: the version is given, nothing is looked up)."""
    proc = run([kubeadm, "config", "images", "list", "--kubernetes-version",
                kubernetes_version], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise KubeadmError("%s config images list failed (exit %d): %s"
                           % (kubeadm, proc.returncode, proc.stderr.strip()))
    return parse_images_list(proc.stdout)


def tag(ref):
    return dockerarchive.split_ref(ref)[1]


def etcd_module_version(etcd_tag):
    """kubeadm's etcd image tag ``3.7.0-0`` (release plus image revision) -> ``v3.7.0``."""
    match = re.match(r"^v?(\d+\.\d+\.\d+)(?:-\d+)?$", etcd_tag)
    if not match:
        raise KubeadmError("unexpected etcd image tag %r" % etcd_tag)
    return "v" + match.group(1)


def coredns_module_version(coredns_tag):
    match = re.match(r"^v?(\d+\.\d+\.\d+)$", coredns_tag)
    if not match:
        raise KubeadmError("unexpected CoreDNS image tag %r" % coredns_tag)
    return "v" + match.group(1)


_CONST_RE = {
    "etcd": re.compile(r'^\s*DefaultEtcdVersion\s*=\s*"([^"]+)"', re.M),
    "coredns": re.compile(r'^\s*CoreDNSVersion\s*=\s*"([^"]+)"', re.M),
    "pause": re.compile(r'^\s*PauseVersion\s*=\s*"([^"]+)"', re.M),
}
_SUPPORTED_ETCD_RE = re.compile(r"SupportedEtcdVersion\s*=\s*map\[uint8\]string\{(.*?)\}", re.S)


def constants_tags(constants_go, minor):
    """{etcd, coredns, pause: tag} as kubeadm's constants.go chooses them for Kubernetes 1.minor.

    etcd follows constants.EtcdSupportedVersion: the SupportedEtcdVersion entry for the minor,
    else the entry of the nearest minor in the table; DefaultEtcdVersion without a table.
    """
    tags = {}
    for key, pattern in _CONST_RE.items():
        match = pattern.search(constants_go)
        if not match:
            raise KubeadmError("constants.go has no %s version" % key)
        tags[key] = match.group(1)
    table = _SUPPORTED_ETCD_RE.search(constants_go)
    if table:
        entries = {int(number): version
                   for number, version in re.findall(r'(\d+)\s*:\s*"([^"]+)"', table.group(1))}
        if entries:
            if minor in entries:
                tags["etcd"] = entries[minor]
            elif minor < min(entries):
                tags["etcd"] = entries[min(entries)]
            elif minor > max(entries):
                tags["etcd"] = entries[max(entries)]
    return tags
