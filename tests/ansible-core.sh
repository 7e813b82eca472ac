#!/usr/bin/env bash
# ansible-test sanity or units on one ansible-core release meta/runtime.yml admits (requires_ansible ">=2.16.0"),
# as kubernetes.core tests each release it supports. 2.16 to 2.19 run on this machine's Python (Debian 12's 3.11,
# the Makefile's VENV_PYTHON), each from a virtualenv of its own; 2.20 and 2.21 need Python 3.12 or newer and run
# on Debian 13's Python 3.13, in tests/trixie-controller.sh's root file system. Nothing else differs: the same copy
# of the collection, the same ansible-test command as make sanity and make units (tests/ansible-test.sh).
# Usage: tests/ansible-core.sh sanity|units VERSION [ansible-test arguments...]
set -euo pipefail
command=${1:?sanity or units}; version=${2:?an ansible-core version, e.g. 2.16.19}; shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
case ${version%.*} in
  2.16 | 2.17 | 2.18 | 2.19)
    python=${VENV_PYTHON:-/usr/bin/python3}
    venv=${XDG_CACHE_HOME:-$HOME/.cache}/slipway/ansible-core/$version
    if [ ! -x "$venv/bin/ansible-test" ]; then
      rm -rf "$venv"
      "$python" -m venv "$venv"
      "$venv/bin/pip" install --quiet "ansible-core==$version"
    fi
    echo "ansible-core $version on $("$venv/bin/python" --version) ($venv)"
    SLIPWAY_ANSIBLE_VENV=$venv exec "$root/tests/ansible-test.sh" "$command" "$@"
    ;;
  2.20 | 2.21)
    rootfs=$("$root/tests/trixie-controller.sh" "$version")
    echo "ansible-core $version on Debian 13's Python ($rootfs)"
    SLIPWAY_ANSIBLE_ROOTFS=$rootfs SLIPWAY_ANSIBLE_VENV=/opt/ansible-core/$version \
      exec "$root/tests/ansible-test.sh" "$command" "$@"
    ;;
  *)
    echo "ansible-core $version: meta/runtime.yml admits 2.16 and newer, and this script knows releases up to 2.21" >&2
    exit 2
    ;;
esac
