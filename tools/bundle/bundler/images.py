"""What goes into each image of the source backend, and how each image runs.

The configs follow how kubeadm and the upstream manifests start the containers:
  kube-apiserver, kube-controller-manager, kube-scheduler, etcd: kubeadm's static pods give
      `command: [NAME, ...]`, so the programs are on PATH in /usr/local/bin.
  kube-proxy: kubeadm's DaemonSet runs /usr/local/bin/kube-proxy; it runs iptables,
      iptables-save, iptables-restore, ip6tables*, conntrack (and nft in nftables mode).
  coredns: kubeadm's Deployment gives only args; the entrypoint is /coredns.
  pause: /pause, as user 65535 like the upstream image.
  metrics-server: entrypoint /metrics-server.
  flannel: kube-flannel.yml runs /opt/bin/flanneld and /opt/bin/install-conf (older manifests
      `cp`); flanneld runs iptables.
  flannel-cni-plugin: kube-flannel.yml runs `cp -f /flannel /opt/cni/bin/flannel`.
  busybox: the test image: sh, wget, nslookup, ping, nc, httpd...
"""

import os
import subprocess

from . import dockerarchive, elf

HERE = os.path.dirname(os.path.abspath(__file__))
WRAPPER = os.path.join(os.path.dirname(HERE), "images", "iptables-wrapper")

PASSWD = (b"root:x:0:0:root:/root:/sbin/nologin\n"
          b"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
          b"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
GROUP = b"root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
NSSWITCH = b"hosts: files dns\nnetworks: files\npasswd: files\ngroup: files\n"

IPTABLES_COMMANDS = ("iptables", "iptables-save", "iptables-restore",
                     "ip6tables", "ip6tables-save", "ip6tables-restore")
XTABLES_EXT_DIR = "/usr/lib/x86_64-linux-gnu/xtables"
NETFILTER_PROGRAMS = ("/usr/sbin/xtables-nft-multi", "/usr/sbin/xtables-legacy-multi",
                      "/usr/sbin/conntrack", "/usr/sbin/nft")
NETFILTER_DATA = ("/etc/protocols", "/etc/services", "/etc/ethertypes")


def base_layer():
    """What every image has: a root and nobody user, name-service config and /tmp."""
    layer = dockerarchive.Layer()
    layer.add_file("/etc/passwd", data=PASSWD)
    layer.add_file("/etc/group", data=GROUP)
    layer.add_file("/etc/nsswitch.conf", data=NSSWITCH)
    layer.add_dir("/tmp", 0o1777)
    layer.add_dir("/root", 0o700)
    return layer


def busybox_applets(busybox, run=subprocess.run):
    """Image paths of busybox's applets (`busybox --list-full`); the binary is static amd64."""
    proc = run([busybox, "--list-full"], capture_output=True, text=True, check=True)
    return sorted("/" + line.strip().lstrip("/") for line in proc.stdout.splitlines()
                  if line.strip())


def add_busybox(layer, busybox, applets):
    """/bin/busybox and a symlink for every applet that the image has no real program for."""
    layer.add_file("/bin/busybox", source=busybox, mode=0o755)
    for path in applets:
        if path == "/bin/busybox" or layer.has(path):
            continue
        layer.add_symlink(path, "/bin/busybox")


def add_netfilter(layer, root):
    """iptables (nf_tables and legacy, behind iptables-wrapper), nft and conntrack from the
    Debian packages unpacked in ``root``, with exactly the shared libraries they load."""
    programs = list(NETFILTER_PROGRAMS)
    ext_dir = os.path.join(root, XTABLES_EXT_DIR.lstrip("/"))
    if not os.path.isdir(ext_dir):
        raise elf.ElfError("no xtables extensions in %s" % ext_dir)
    programs += sorted(os.path.join(XTABLES_EXT_DIR, name) for name in os.listdir(ext_dir)
                       if name.endswith(".so"))
    for path in elf.closure(root, programs):
        layer.add_from_root(root, path)
    sbin = os.path.join(root, "usr/sbin")
    for name in sorted(os.listdir(sbin)):
        full = os.path.join(sbin, name)
        if os.path.islink(full) and os.readlink(full).startswith("xtables-") and (
                name.startswith("iptables-") or name.startswith("ip6tables-")):
            layer.add_from_root(root, "/usr/sbin/" + name)
    for path in NETFILTER_DATA:
        if os.path.exists(os.path.join(root, path.lstrip("/"))):
            layer.add_from_root(root, path)
    layer.add_file("/usr/sbin/iptables-wrapper", source=WRAPPER, mode=0o755)
    for name in IPTABLES_COMMANDS:
        layer.add_symlink("/usr/sbin/" + name, "iptables-wrapper")
    layer.add_dir("/run", 0o755)
    return layer


class ImageSpec:
    """One image: its name, full reference, component, and how to lay out and run it."""

    def __init__(self, name, ref, component, files, config, symlinks=(), busybox=False,
                 netfilter=False, data=(), dirs=()):
        self.name = name
        self.ref = ref
        self.component = component
        self.files = dict(files)          # image path -> host file (a program: mode 0755)
        self.config = dict(config)        # dockerarchive.image_config arguments
        self.symlinks = dict(symlinks)
        self.busybox = busybox
        self.netfilter = netfilter
        self.data = dict(data)            # image path -> host file (configuration: mode 0644)
        self.dirs = dict(dirs)            # image path -> (mode, "uid:gid" owner)

    def filename(self):
        return "images/%s.tar" % self.name

    def key(self):
        """What decides the archive, for the cache key (file contents come from their steps)."""
        key = {"name": self.name, "ref": self.ref, "files": self.files, "config": self.config,
               "symlinks": self.symlinks, "busybox": self.busybox, "netfilter": self.netfilter}
        if self.data or self.dirs:
            key.update(data=self.data, dirs={path: [mode, owner] for path, (mode, owner)
                                             in self.dirs.items()})
        return key

    def layer(self, busybox_path=None, applets=(), netfilter_root=None):
        layer = base_layer()
        if self.netfilter:
            add_netfilter(layer, netfilter_root)
        for path, (mode, owner) in sorted(self.dirs.items()):
            uid, _sep, gid = owner.partition(":")
            layer.add_dir(path, mode, uid=int(uid), gid=int(gid or uid))
        for path, source in sorted(self.files.items()):
            layer.add_file(path, source=source, mode=0o755)
        for path, source in sorted(self.data.items()):
            layer.add_file(path, source=source, mode=0o644)
        for path, target in sorted(self.symlinks.items()):
            layer.add_symlink(path, target)
        if self.busybox:
            add_busybox(layer, busybox_path, applets)
        return layer


def source_image_specs(refs, artifacts, labels):
    """The images of the source backend.

    refs: {name: full reference}; artifacts: {program name: built file};
    labels: {name: {label: value}}.
    """
    def spec(name, component, files, config, **kwargs):
        config = dict(config)
        config["labels"] = labels.get(name, {})
        return ImageSpec(name, refs[name], component, files, config, **kwargs)

    local = "/usr/local/bin/"
    specs = [
        spec("kube-apiserver", "kubernetes",
             {local + "kube-apiserver": artifacts["kube-apiserver"]},
             {"cmd": [local + "kube-apiserver"]}),
        spec("kube-controller-manager", "kubernetes",
             {local + "kube-controller-manager": artifacts["kube-controller-manager"]},
             {"cmd": [local + "kube-controller-manager"]}),
        spec("kube-scheduler", "kubernetes",
             {local + "kube-scheduler": artifacts["kube-scheduler"]},
             {"cmd": [local + "kube-scheduler"]}),
        spec("kube-proxy", "kubernetes",
             {local + "kube-proxy": artifacts["kube-proxy"]},
             {"cmd": [local + "kube-proxy"]}, busybox=True, netfilter=True),
        spec("etcd", "etcd",
             {local + "etcd": artifacts["etcd"], local + "etcdctl": artifacts["etcdctl"],
              local + "etcdutl": artifacts["etcdutl"]},
             {"cmd": [local + "etcd"]}),
        spec("coredns", "coredns", {"/coredns": artifacts["coredns"]},
             {"entrypoint": ["/coredns"]}),
        spec("pause", "pause", {"/pause": artifacts["pause"]},
             {"entrypoint": ["/pause"], "user": "65535:65535"}),
        spec("metrics-server", "metrics_server", {"/metrics-server": artifacts["metrics-server"]},
             {"entrypoint": ["/metrics-server"]}),
        spec("flannel", "flannel",
             {"/opt/bin/flanneld": artifacts["flanneld"],
              "/opt/bin/install-conf": artifacts["install-conf"]},
             {"entrypoint": ["/opt/bin/flanneld"]}, busybox=True, netfilter=True),
        spec("flannel-cni-plugin", "flannel_cni_plugin", {"/flannel": artifacts["flannel"]},
             {"cmd": ["/bin/sh"]}, busybox=True),
        spec("busybox", "busybox", {}, {"cmd": ["sh"]}, busybox=True),
    ]
    return specs
