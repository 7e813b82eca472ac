#!/usr/bin/env bash
# `make test`: every suite, each recorded by tests/suite.sh, then one "N passed, N failed" line.
# The bundle is built in the background from the start: from cold caches it mostly waits on
# module downloads, so it overlaps well with lint, sanity and the unit tests, which use the CPU.
# The suites that need it (integration, Molecule) run in TEST_LANES parallel lanes. On 2 cores the
# lanes share a saturated CPU (docs/performance.md: most of it inside the lab's control planes), so
# a second lane mostly balances long and short suites; a third would not help. Lane 1 runs lint, typecheck
# (mypy), sanity, the unit and tools tests, then the integration tests; the other lanes start on the scenarios as soon as
# the bundle is there (with warm caches, within a minute), beside lane 1's static checks. Every
# lane then takes the next scenario of SCENARIOS (in the Makefile's order, chosen from measured lengths) until none
# is left.
# Each lane's console goes to .cache/test-logs/lane-N.console; only the suites' "===" lines are
# shown, and the end of every failed suite's log is printed before the summary.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
make=${MAKE:-make}
lanes=${TEST_LANES:-2}
results=$root/.cache/test-results
logs=$root/.cache/test-logs
queue=$root/.cache/test-queue
mkdir -p "$logs"
rm -rf "$results" "$queue"

# The bundle's job leaves bundle.done behind when it ends (built or failed: the suites that need
# it then fail on their own and say why).
rm -f "$logs/bundle.done"
( tests/suite.sh bundle -- "$make" --no-print-directory bundle > "$logs/bundle.console" 2>&1
  touch "$logs/bundle.done" ) &
bundle_pid=$!
echo "=== bundle: building in the background (log: $logs/bundle.log)"

wait_for_bundle() {
  while [ ! -e "$logs/bundle.done" ]; do sleep 5; done
}

# The queue: one file per scenario, numbered in SCENARIOS order; a lane claims one by renaming
# it (atomic), so no scenario runs twice.
mkdir -p "$queue"
index=0
for scenario in ${SCENARIOS:?}; do
  index=$((index + 1))
  : > "$queue/$(printf '%03d' "$index")-$scenario"
done

lane() {
  local number=$1 item
  if [ "$number" -eq 1 ]; then
    "$make" --no-print-directory lint
    "$make" --no-print-directory typecheck
    "$make" --no-print-directory sanity
    "$make" --no-print-directory units
    # The units on the oldest and the newest ansible-core release requires_ansible admits, the sanity on the newest,
    # where new deprecations appear first (tests/ansible-core.sh): the two ends of the templating change of 2.19,
    # which is what the releases differ in for the collection. make ansible-core runs both on every release.
    "$make" --no-print-directory ansible-core ANSIBLE_CORE_RELEASES="2.16.19 2.21.5" ANSIBLE_CORE_SANITY="2.21.5"
    tests/suite.sh tools -- "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider tests/tools
    echo "=== lane 1: waiting for the bundle"
  fi
  wait_for_bundle
  if [ "$number" -eq 1 ]; then
    tail -n 3 "$logs/bundle.console"
    "$make" --no-print-directory integration
  fi
  while :; do
    item=$(cd "$queue" && find . -maxdepth 1 -type f -name '[0-9]*' -printf '%f\n' | sort | head -n 1)
    [ -n "$item" ] || break
    mv "$queue/$item" "$queue/taken-$number-$item" 2>/dev/null || continue
    "$make" --no-print-directory molecule SCENARIO="${item#*-}"
  done
}

pids=()
for number in $(seq 1 "$lanes"); do
  ( lane "$number" 2>&1 | tee "$logs/lane-$number.console" | grep -a --line-buffered '^=== ' ) &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
wait "$bundle_pid"

# The end of each failed suite's log, where a reader of this output looks first.
while read -r name passed failed took; do
  if [ "$failed" -gt 0 ]; then
    echo
    echo "=== $name failed ($passed passed, $failed failed, $took): the end of $logs/$name.log"
    tail -n 60 "$logs/$name.log"
  fi
done < "$results"
echo
exec tests/summary.sh "$results"
