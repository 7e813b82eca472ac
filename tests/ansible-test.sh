#!/usr/bin/env bash
# Run ansible-test (sanity or units) from a copy of the collection at
# .cache/ansible-test/ansible_collections/slipway/cluster, as ansible-test requires.
# The copy holds exactly the files git would ship (tracked and new, not ignored).
set -euo pipefail
command=${1:?sanity or units}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
tree=$root/.cache/ansible-test/ansible_collections/slipway/cluster
mkdir -p "$tree"
cd "$root"
git ls-files -co --exclude-standard -z | rsync -a --delete --from0 --files-from=- ./ "$tree/"
# --delete above only prunes inside listed dirs: remove files no longer shipped.
(cd "$tree" && find . -type f -not -path './tests/output/*' -print0) | while IFS= read -r -d '' f; do
  [ -e "$root/$f" ] || rm -f "$tree/$f"
done
cd "$tree"
export PATH=$root/.venv/bin:$PATH
case $command in
  sanity) exec ansible-test sanity --venv --python 3.11 --color no "$@" ;;
  units)  exec ansible-test units --venv --python 3.11 --color no "$@" ;;
  *) echo "unknown command $command" >&2; exit 2 ;;
esac
