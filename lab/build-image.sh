#!/usr/bin/env bash
# Build the lab's node image: Debian (bookworm or trixie) with systemd as PID 1 and sshd, made
# with debootstrap from the Debian mirror only (no container registry is reachable offline).
#
# Usage: build-image.sh           build unless the image's inputs label is current
#        build-image.sh --check   exit 0 if the image is current, 1 if missing or stale
#        build-image.sh --force   rebuild even if current
# Env:   SLIPWAY_LAB_RELEASE Debian release: bookworm (default) or trixie
#        SLIPWAY_LAB_IMAGE   image name (default localhost/slipway/node:$SLIPWAY_LAB_RELEASE)
#        SLIPWAY_LAB_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#        SLIPWAY_LAB_HOME    scratch space and package cache (default ~/.cache/slipway-lab)
#
# The image is labelled with a hash of its inputs (this script, node-packages.txt, the mirror
# and the running kernel, whose built-in modules are listed in the image); it is reused while
# that hash is unchanged. No SSH key and no Kubernetes-side software (containerd, haproxy,
# etcd...) is baked in: the lab injects the key at container start and the roles install the rest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script=$here/$(basename "${BASH_SOURCE[0]}")
packages_file=$here/node-packages.txt
RELEASE=${SLIPWAY_LAB_RELEASE:-bookworm}
case $RELEASE in bookworm|trixie) ;; *) echo "SLIPWAY_LAB_RELEASE: bookworm or trixie, not '$RELEASE'" >&2; exit 2 ;; esac
IMAGE=${SLIPWAY_LAB_IMAGE:-localhost/slipway/node:$RELEASE}
MIRROR=${SLIPWAY_LAB_MIRROR:-http://deb.debian.org/debian}
LAB_HOME=${SLIPWAY_LAB_HOME:-$HOME/.cache/slipway-lab}
LABEL=io.slipway.lab.inputs

inputs_hash() {
  { cat "$script" "$packages_file"; echo "$MIRROR $RELEASE"; uname -r; } | sha256sum | cut -c1-16
}

image_label() {
  podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$IMAGE" 2>/dev/null || true
}

packages() {
  sed -e 's/#.*//' -e 's/[[:space:]]//g' "$packages_file" | grep -v '^$' | paste -sd, -
}

unmount_below() {  # debootstrap mounts /proc and /sys in the target; a failed run can leave them
  findmnt -rn -o TARGET | grep "^$1/" | sort -r | xargs -r umount -l || true
}

bootstrap() {  # $1: target directory
  mkdir -p "$LAB_HOME/debs"  # downloaded packages are kept: a rebuild fetches only what changed
  # two stages, so dpkg can skip its fsync per file in between (an image is rebuilt, not repaired)
  debootstrap --foreign --variant=minbase --cache-dir="$LAB_HOME/debs" --include="$(packages)" \
    "$RELEASE" "$1" "$MIRROR"
  mkdir -p "$1/etc/dpkg/dpkg.cfg.d"
  echo force-unsafe-io > "$1/etc/dpkg/dpkg.cfg.d/90slipway-lab-build"
  chroot "$1" /debootstrap/debootstrap --second-stage
  rm -f "$1/etc/dpkg/dpkg.cfg.d/90slipway-lab-build"
  cat > "$1/etc/apt/sources.list" <<EOF
deb $MIRROR $RELEASE main
deb $MIRROR $RELEASE-updates main
deb ${MIRROR%/debian}/debian-security $RELEASE-security main
EOF
  # no recommends/suggests inside nodes (faster, smaller, like cloud images)
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    > "$1/etc/apt/apt.conf.d/90slipway-lab"
}

configure_systemd() {  # systemd in a container: fresh machine-id per container, no udev/getty
  : > "$1/etc/machine-id"; rm -f "$1/var/lib/dbus/machine-id"
  # binfmt_misc belongs to the machine, not the node; e2scrub has no ext4 volume to check here
  chroot "$1" systemctl mask getty@tty1.service serial-getty@ttyS0.service console-getty.service \
    systemd-udevd.service systemd-udevd-kernel.socket systemd-udevd-control.socket \
    sys-kernel-config.mount systemd-firstboot.service \
    proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount systemd-binfmt.service \
    e2scrub_reap.service e2scrub_all.timer >/dev/null 2>&1
}

configure_etc() {
  # debootstrap copies the build machine's hostname, hosts and resolv.conf: start clean.
  # The node's name and address are written at first boot by slipway-lab-node.service.
  : > "$1/etc/hostname"
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$1/etc/hosts"
  : > "$1/etc/resolv.conf"
  install -m 0755 /dev/stdin "$1/usr/local/sbin/slipway-lab-node-setup" <<'EOF'
#!/bin/sh
# Make this container look like a real machine before anything else starts:
# - podman bind-mounts /etc/hostname, so renaming a file onto it (Ansible's atomic writes,
#   hostnamectl) fails with EBUSY: unmount it, keep a plain file underneath;
# - systemd leaves / private inside containers; a real host has it shared (kubelet wants that);
# - cgroup v1: podman bind-mounts the machine's whole name=systemd hierarchy, while every other
#   hierarchy shows only the node's own subtree. The kubelet (systemd cgroup driver) looks for
#   kubepods.slice at the top of each hierarchy, but the node's systemd makes it in its own
#   subtree: show that one at the top of name=systemd too, as on a real machine. The same for the
#   cgroup2 hierarchy of the hybrid layout (/sys/fs/cgroup/unified, also mounted whole), where
#   systemd puts every scope and runc (>= 1.2) adds each `runc exec` process: without it every
#   exec failed with "openat2 /sys/fs/cgroup/unified/kubepods.slice/.../cgroup.procs: no such
#   file or directory".
set -eu
name=$(cat /etc/hostname 2>/dev/null || true)
while grep -q ' /etc/hostname ' /proc/self/mountinfo; do umount /etc/hostname; done
if [ ! -s /etc/hostname ]; then  # first boot: take the name podman gave and the address
  echo "${name:-$(hostname)}" > /etc/hostname
  addr=$(ip -4 -o addr show scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
  [ -z "$addr" ] || printf '%s\t%s\n' "$addr" "$(cat /etc/hostname)" >> /etc/hosts
fi
hostname -F /etc/hostname
own=$(sed -n 's|^[0-9]*:name=systemd:\(.*\)/init\.scope$|\1|p' /proc/1/cgroup)
if [ -n "$own" ] && [ -d "/sys/fs/cgroup/systemd$own" ]; then
  mkdir -p "/sys/fs/cgroup/systemd$own/kubepods.slice" /sys/fs/cgroup/systemd/kubepods.slice
  mountpoint -q /sys/fs/cgroup/systemd/kubepods.slice ||
    mount --bind "/sys/fs/cgroup/systemd$own/kubepods.slice" /sys/fs/cgroup/systemd/kubepods.slice
fi
own2=$(sed -n 's|^0::\(.*\)/init\.scope$|\1|p' /proc/1/cgroup)
if [ -n "$own2" ] && [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] &&
   [ -d "/sys/fs/cgroup/unified$own2" ]; then
  mkdir -p "/sys/fs/cgroup/unified$own2/kubepods.slice" /sys/fs/cgroup/unified/kubepods.slice
  mountpoint -q /sys/fs/cgroup/unified/kubepods.slice ||
    mount --bind "/sys/fs/cgroup/unified$own2/kubepods.slice" /sys/fs/cgroup/unified/kubepods.slice
fi
# - cgroup v1 hierarchies podman gives the container no subtree of (here perf_event, hugetlb and
#   net_cls,net_prio, which the node's own systemd mounts whole) are shared by every node of
#   every lab cluster: each kubelet took the other nodes' pods under kubepods.slice there for
#   orphans of its own, and spent half its CPU every 2 s failing to remove them. Give each node
#   (container) a kubepods.slice of its own in them, as a machine has.
id=$(sed -n 's|^[0-9]*:pids:.*/libpod-\([0-9a-f]*\)$|\1|p' /proc/1/cgroup)
awk -F: '$2 != "" && $2 !~ /^name=/ && $3 == "/" { print $2 }' /proc/1/cgroup | while read -r ctrl; do
  top=/sys/fs/cgroup/$ctrl
  [ -n "$id" ] && [ -d "$top" ] || continue
  mountpoint -q "$top/kubepods.slice" && continue
  mkdir -p "$top/slipway-lab/$id/kubepods.slice" "$top/kubepods.slice"
  mount --bind "$top/slipway-lab/$id/kubepods.slice" "$top/kubepods.slice"
done
mount --make-rshared /
EOF
  cat > "$1/etc/systemd/system/slipway-lab-node.service" <<'EOF'
[Unit]
Description=Plain /etc/hostname and shared mounts, like a real machine
DefaultDependencies=no
Before=sysinit.target systemd-hostnamed.service ssh.service
ConditionVirtualization=container

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/slipway-lab-node-setup

[Install]
WantedBy=sysinit.target
EOF
  chroot "$1" systemctl enable slipway-lab-node.service >/dev/null 2>&1
}

configure_sshd() {
  # Per-container host keys, made at first boot. Only ed25519 and ecdsa: an RSA key takes
  # seconds on a busy 2-core machine and no client of the lab needs one.
  # Root logs in by key only; the key is mounted in by lab.py, never baked in.
  rm -f "$1"/etc/ssh/ssh_host_*
  mkdir -p "$1/etc/systemd/system/ssh.service.d" "$1/root/.ssh"
  chmod 700 "$1/root/.ssh"
  cat > "$1/etc/systemd/system/ssh.service.d/keygen.conf" <<'UNIT'
[Service]
ExecStartPre=
ExecStartPre=/bin/sh -c 'for t in ed25519 ecdsa; do f=/etc/ssh/ssh_host_$${t}_key; [ -s $$f ] || ssh-keygen -q -t $$t -N "" -f $$f; done'
ExecStartPre=/usr/sbin/sshd -t
UNIT
  cat > "$1/etc/ssh/sshd_config.d/slipway-lab.conf" <<'CONF'
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
PermitRootLogin prohibit-password
PasswordAuthentication no
UseDNS no
CONF
}

configure_apt_lists() {  # empty lists that look stale: apt(update_cache, cache_valid_time) refreshes
  chroot "$1" apt-get clean
  rm -rf "$1"/var/lib/apt/lists/*
  rm -f "$1/var/lib/apt/periodic/update-success-stamp"
  touch -d 2000-01-01 "$1/var/lib/apt/lists"
}

write_modules_builtin() {
  # CONFIG_MODULES=n kernels: teach modprobe which modules are built in, so that
  # `modprobe br_netfilter` / `modprobe overlay` succeed as on a host with loadable modules.
  local k cfg
  k=$(uname -r); mkdir -p "$1/lib/modules/$k"
  [ -r /proc/config.gz ] || return 0
  cfg=$(zcat /proc/config.gz)
  while read -r sym path; do
    if grep -q "^$sym=y" <<<"$cfg"; then echo "kernel/$path"; fi
  done > "$1/lib/modules/$k/modules.builtin" <<'EOF'
CONFIG_BRIDGE_NETFILTER net/bridge/br_netfilter.ko
CONFIG_BRIDGE net/bridge/bridge.ko
CONFIG_OVERLAY_FS fs/overlayfs/overlay.ko
CONFIG_NF_CONNTRACK net/netfilter/nf_conntrack.ko
CONFIG_IP_NF_IPTABLES net/ipv4/netfilter/ip_tables.ko
CONFIG_IP_NF_FILTER net/ipv4/netfilter/iptable_filter.ko
CONFIG_IP_NF_NAT net/ipv4/netfilter/iptable_nat.ko
CONFIG_NETFILTER_XT_MATCH_CONNTRACK net/netfilter/xt_conntrack.ko
CONFIG_NF_TABLES net/netfilter/nf_tables.ko
CONFIG_VXLAN drivers/net/vxlan/vxlan.ko
CONFIG_VETH drivers/net/veth.ko
CONFIG_IP_VS net/netfilter/ipvs/ip_vs.ko
EOF
  chroot "$1" depmod -a "$k" 2>/dev/null || true
}

import_image() {  # $1: root filesystem, $2: inputs hash
  local old
  old=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
  tar -C "$1" -c . | podman import -q \
    --change 'CMD=["/sbin/init"]' --change 'STOPSIGNAL=SIGRTMIN+3' \
    --change 'ENV=container=podman' --change "LABEL=$LABEL=$2" - "$IMAGE" >/dev/null
  # drop the image this one replaces, unless nodes still run on it
  if [ -n "$old" ]; then podman rmi "$old" >/dev/null 2>&1 || true; fi
}

step() { echo "== $(date +%T) $*"; }

build() {  # $1: inputs hash
  local work rootfs
  mkdir -p "$LAB_HOME"
  work=$(mktemp -d "$LAB_HOME/build.XXXXXX")
  rootfs=$work/rootfs
  # shellcheck disable=SC2064  # expand now: the trap must clean this very directory
  trap "unmount_below '$work'; rm -rf --one-file-system '$work'" EXIT
  step "debootstrap $RELEASE from $MIRROR"; bootstrap "$rootfs"
  step "configure systemd, /etc, sshd, apt lists, modules.builtin"
  configure_systemd "$rootfs"
  configure_etc "$rootfs"
  configure_sshd "$rootfs"
  configure_apt_lists "$rootfs"
  write_modules_builtin "$rootfs"
  step "import as $IMAGE"; import_image "$rootfs" "$1"
  step "built $IMAGE ($1): $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes"
}

main() {
  local want
  want=$(inputs_hash)
  case "${1:-}" in
    --check) [ "$(image_label)" = "$want" ]; return ;;
    --force) build "$want"; return ;;
    "") ;;
    *) echo "usage: $0 [--check|--force]" >&2; return 2 ;;
  esac
  if [ "$(image_label)" = "$want" ]; then
    echo "$IMAGE is up to date ($want)"
  else
    build "$want"
  fi
}

main "$@"
