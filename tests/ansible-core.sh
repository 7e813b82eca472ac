#!/usr/bin/env bash
# ansible-test sanity or units on one ansible-core release meta/runtime.yml admits (requires_ansible ">=2.16.0"),
# as kubernetes.core tests each release it supports. 2.16 to 2.19 run on this machine's Python (Debian 12's 3.11,
# the Makefile's VENV_PYTHON), each from a virtualenv of its own; 2.20 and 2.21 need Python 3.12 or newer and run
# on Debian 13's Python 3.13, in tests/trixie-controller.sh's root file system. Nothing else differs: the same copy
# of the collection, the same ansible-test command as make sanity and make units (tests/ansible-test.sh).
#
# `molecule` runs a Molecule scenario from that release instead, as a user of it runs the collection: the Ansible
# package of its line (ansible 9 for 2.16), the collections galaxy.yml needs newer than that package has taken from
# .venv's Ansible package where they admit the release, and molecule and the Python libraries as requirements.txt
# pins them. make test runs the `preinstall` scenario so, from the oldest release (SCENARIOS: preinstall@2.16.19).
# Usage: tests/ansible-core.sh sanity|units VERSION [ansible-test arguments...]
#        tests/ansible-core.sh molecule VERSION [molecule test arguments...]
set -euo pipefail
command=${1:?sanity, units or molecule}; version=${2:?an ansible-core version, e.g. 2.16.19}; shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$command" = molecule ]; then
  # The Ansible package of each release line molecule runs on here (Python 3.11).
  case ${version%.*} in
    2.16) package=ansible==9.13.0 ;;
    *) echo "ansible-core $version: tests/ansible-core.sh runs Molecule from 2.16 only (2.19 is .venv's)" >&2; exit 2 ;;
  esac
  venv=${XDG_CACHE_HOME:-$HOME/.cache}/slipway/ansible-core/molecule-$version
  pins=$(grep -E '^(molecule|molecule-plugins\[podman\]|kubernetes|jmespath|netaddr)==' "$root/requirements.txt")
  if [ ! -e "$venv/.complete" ]; then
    rm -rf "$venv"
    "${VENV_PYTHON:-/usr/bin/python3}" -m venv "$venv"
    # shellcheck disable=SC2086  # one requirement per word
    "$venv/bin/pip" install --quiet "$package" "ansible-core==$version" $pins
    touch "$venv/.complete"
  fi
  # kubernetes.core: galaxy.yml needs >=3.0.0, ansible 9 has 2.4.2; .venv's (ansible 12's) admits ansible-core 2.16.
  collections=$venv/collections/ansible_collections
  mkdir -p "$collections/kubernetes"
  ln -sfn "$("$root/.venv/bin/python" -c 'import ansible_collections.kubernetes.core as c; print(list(c.__path__)[0])')" \
    "$collections/kubernetes/core"
  echo "molecule from ansible-core $version ($("$venv/bin/ansible" --version | head -n 1)), $venv"
  PATH=$venv/bin:$PATH ANSIBLE_COLLECTIONS_PATH=$root/.cache/collections:$venv/collections \
    exec "$venv/bin/molecule" test "$@"
fi
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
