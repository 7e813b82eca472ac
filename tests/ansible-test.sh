#!/usr/bin/env bash
# Run ansible-test (sanity or units) from a copy of the collection at
# ansible_collections/slipway/cluster outside the checkout, as ansible-test requires.
# The copy holds exactly the files git would ship (tracked and new, not ignored).
set -euo pipefail
command=${1:?sanity or units}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
# Outside the checkout: inside it, ansible-test would find our .git and skip the ignored copy.
# One copy per checkout, so two checkouts tested at once do not share (or prune) each other's.
checkout=$(printf '%s' "$root" | sha1sum | cut -c1-10)
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
# ansible-test makes its own virtualenvs from the python3.11 it finds on PATH: keep ours off PATH so
# it does not pick the virtualenv's interpreter (which has no pip of its own to lend), and put the
# directory of the interpreter ours was made from first (Debian's, the Makefile's VENV_PYTHON).
base=$("$root/.venv/bin/python" -c 'import os, sys; print(os.path.dirname(os.path.realpath(sys._base_executable)))')
PATH=$base:$(tr ':' '\n' <<<"$PATH" | grep -vx "$root/.venv/bin" | paste -sd:)
export PATH
ansible_test=$root/.venv/bin/ansible-test
"$root/tests/offline-get-pip.sh" "$root/.venv/bin/python"
case $command in
  sanity) exec "$ansible_test" sanity --venv --python 3.11 --color no "$@" ;;
  units)  exec "$ansible_test" units --venv --python 3.11 --color no "$@" ;;
  *) echo "unknown command $command" >&2; exit 2 ;;
esac
