#!/usr/bin/env bash
# A Debian 13 (trixie) controller's root file system, for the ansible-core releases that need Python 3.12 or newer
# (2.20, 2.21): debootstrap from Debian's packages only, like the lab's node image (lab/build-image.sh), with
# trixie's Python 3.13 and venv. Prints the directory; `podman run --rootfs DIR` runs commands in it
# (tests/ansible-test.sh with SLIPWAY_ANSIBLE_ROOTFS). Made once and kept, named by a hash of this script and the
# mirror: a second call prints the same directory at once.
# Usage: tests/trixie-controller.sh [ANSIBLE_CORE_VERSION...]   (each gets a virtualenv at /opt/ansible-core/VERSION)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# podman as the lab runs it (runc, ulimits root may set here): lab/containers.conf, as the Makefile exports it.
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/../lab/containers.conf}
MIRROR=${SLIPWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What ansible-test needs of its controller: Python with venv (ansible-test makes its own virtualenvs) and the
# certificates pip verifies PyPI with; and what a Molecule scenario's playbooks need of theirs (tests/ansible-core.sh
# molecule): the OpenSSH client the lab's nodes are reached with.
PACKAGES=python3,python3-venv,ca-certificates,openssh-client
cache=${XDG_CACHE_HOME:-$HOME/.cache}/slipway/controller
key=$({ cat "$0"; echo "$MIRROR $PACKAGES"; } | sha256sum | cut -c1-12)
rootfs=$cache/trixie-$key
mkdir -p "$cache/debs"
if [ ! -e "$rootfs/.complete" ]; then
  rm -rf "$rootfs.tmp"
  echo "trixie controller: debootstrap into $rootfs" >&2
  debootstrap --variant=minbase --cache-dir="$cache/debs" --include="$PACKAGES" trixie "$rootfs.tmp" "$MIRROR" >&2
  chroot "$rootfs.tmp" apt-get clean
  touch "$rootfs.tmp/.complete"
  # Older trees of this script are no use any more.
  find "$cache" -mindepth 1 -maxdepth 1 -name 'trixie-*' -not -name "trixie-$key*" -exec rm -rf {} +
  mv "$rootfs.tmp" "$rootfs"
fi
# This machine's way to the package index, as its own pip has it: its pip configuration and the certificates it
# trusts (a registry behind a proxy of its own CA).
[ -e /etc/pip.conf ] && cp /etc/pip.conf "$rootfs/etc/pip.conf"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
for version in "$@"; do
  venv=/opt/ansible-core/$version
  [ -e "$rootfs$venv/.complete" ] && continue
  echo "trixie controller: ansible-core $version in $venv" >&2
  rm -rf "${rootfs:?}$venv"
  podman run --rm --rootfs "$rootfs" /usr/bin/python3 -m venv "$venv" >&2
  podman run --rm --rootfs "$rootfs" "$venv/bin/pip" install --quiet "ansible-core==$version" >&2
  touch "$rootfs$venv/.complete"
done
echo "$rootfs"
