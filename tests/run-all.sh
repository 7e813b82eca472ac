#!/usr/bin/env bash
# `make test`: every suite, each recorded by tests/suite.sh, then one "N passed, N failed" line.
# The bundle is built in the background from the start: from cold caches it mostly waits on
# module downloads, so it overlaps well with lint, sanity and the unit tests, which use the CPU.
# The suites that need it (integration, Molecule) wait for it.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
make=${MAKE:-make}
results=$root/.cache/test-results
logs=$root/.cache/test-logs
mkdir -p "$logs"
rm -f "$results"

tests/suite.sh bundle -- "$make" --no-print-directory bundle > "$logs/bundle.console" 2>&1 &
bundle_pid=$!
echo "=== bundle: building in the background (log: $logs/bundle.log)"

"$make" --no-print-directory lint
"$make" --no-print-directory sanity
"$make" --no-print-directory units
tests/suite.sh tools -- "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider tests/tools

echo "=== waiting for the bundle"
wait "$bundle_pid"
tail -n 3 "$logs/bundle.console"

"$make" --no-print-directory integration
for scenario in ${SCENARIOS:?}; do
  "$make" --no-print-directory molecule SCENARIO="$scenario"
done
exec tests/summary.sh "$results"
