#!/usr/bin/env bash
# Run ansible-test (sanity or units) from a copy of the collection at
# ansible_collections/slipway/cluster outside the checkout, as ansible-test requires.
# The copy holds exactly the files git would ship (tracked and new, not ignored).
# SLIPWAY_ANSIBLE_VENV picks the virtualenv whose ansible-core runs the tests (default .venv: the pinned one);
# tests/ansible-core.sh sets it to run them on each release meta/runtime.yml admits. With SLIPWAY_ANSIBLE_ROOTFS
# (tests/trixie-controller.sh's Debian 13 root file system), SLIPWAY_ANSIBLE_VENV is a path inside it and
# ansible-test runs there, in a container of that root file system, on its Python.
set -euo pipefail
command=${1:?sanity or units}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
# podman as the lab runs it (runc, ulimits root may set here): lab/containers.conf, as the Makefile exports it.
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/lab/containers.conf}
# Outside the checkout: inside it, ansible-test would find our .git and skip the ignored copy.
# One copy per checkout, so two checkouts tested at once do not share (or prune) each other's.
venv=${SLIPWAY_ANSIBLE_VENV:-$root/.venv}
rootfs=${SLIPWAY_ANSIBLE_ROOTFS:-}
checkout=$(printf '%s %s' "$root" "$venv" | sha1sum | cut -c1-10)
[ "$venv" = "$root/.venv" ] && checkout=$(printf '%s' "$root" | sha1sum | cut -c1-10)
tree=${SLIPWAY_TEST_TREE:-${XDG_CACHE_HOME:-$HOME/.cache}/slipway/ansible-test/$checkout}/ansible_collections/slipway/cluster
mkdir -p "$tree"
cd "$root"
git ls-files -co --exclude-standard -z | rsync -a --delete --from0 --files-from=- ./ "$tree/"
# --delete above only prunes inside listed dirs: remove files and links no longer shipped.
(cd "$tree" && find . \( -type f -o -type l \) -not -path './tests/output/*' -print0) | while IFS= read -r -d '' f; do
  [ -e "$root/$f" ] || [ -L "$root/$f" ] || rm -f "$tree/$f"
done
# ...and the directories that left empty (git ships no empty directory; tests look for some by name).
find "$tree" -mindepth 1 -depth -type d -empty -not -path "$tree/tests/output*" -delete
cd "$tree"
if [ -n "$rootfs" ]; then
  # The copy's ansible_collections/ at /src, the offline get-pip step beside it, the caches kept in the root file
  # system (its /root). ansible-test makes its virtualenvs from the root file system's python3. Privileged as the
  # lab's nodes are: some units run their probe in a PID namespace of its own (unshare), as on a node.
  top=${tree%/ansible_collections/slipway/cluster}
  exec podman run --rm --privileged --volume "$top:/src" --volume "$root/tests/offline-get-pip.sh:/offline-get-pip.sh:ro" \
    --workdir /src/ansible_collections/slipway/cluster --env HOME=/root --env PATH=/usr/local/bin:/usr/bin:/bin \
    --rootfs "$rootfs" /bin/bash -c 'set -e; /offline-get-pip.sh "$0/bin/python"
      python=$("$0/bin/python" -c "import sys; print(\"%d.%d\" % sys.version_info[:2])")
      exec "$0/bin/ansible-test" "$1" --venv --python "$python" --color no "${@:2}"' "$venv" "$command" "$@"
fi
# ansible-test makes its own virtualenvs from the python3.11 it finds on PATH: keep ours off PATH so
# it does not pick the virtualenv's interpreter (which has no pip of its own to lend), and put the
# directory of the interpreter ours was made from first (Debian's, the Makefile's VENV_PYTHON).
base=$("$venv/bin/python" -c 'import os, sys; print(os.path.dirname(os.path.realpath(sys._base_executable)))')
python=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
PATH=$base:$(tr ':' '\n' <<<"$PATH" | grep -vx "$venv/bin" | paste -sd:)
export PATH
ansible_test=$venv/bin/ansible-test
"$root/tests/offline-get-pip.sh" "$venv/bin/python"
case $command in
  sanity) exec "$ansible_test" sanity --venv --python "$python" --color no "$@" ;;
  units)  exec "$ansible_test" units --venv --python "$python" --color no "$@" ;;
  *) echo "unknown command $command" >&2; exit 2 ;;
esac
