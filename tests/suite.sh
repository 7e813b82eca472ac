#!/usr/bin/env bash
# Run one test suite, keep its log, and record "NAME PASSED FAILED" for the summary.
# Usage: tests/suite.sh NAME -- COMMAND [ARGS...]
set -uo pipefail
name=$1; shift; [ "${1:-}" = "--" ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
logs=$root/.cache/test-logs; mkdir -p "$logs"
log=$logs/$name.log
echo "=== $name: $*"
start=$(date +%s)
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
took=$(( $(date +%s) - start ))
# pytest-style counts when the suite prints them, sanity test counts for ansible-test sanity, else 1 suite.
# pytest's closing line, with or without -q's bare form: "=== 3 passed in 1s ===" or "3 passed in 1s".
summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|errors?)(, [0-9]+ [a-z]+)* in [0-9.]+s' "$log")
if [ -n "$summary" ]; then
  # ansible-test units runs pytest once per test group: add every summary line up.
  passed=$(grep -oE '[0-9]+ passed' <<<"$summary" | awk '{ s += $1 } END { print s + 0 }')
  failed=$(grep -oE '[0-9]+ (failed|error|errors)' <<<"$summary" | awk '{ s += $1 } END { print s + 0 }')
elif grep -q "^Running sanity test" "$log"; then
  total=$(grep -c "^Running sanity test" "$log")
  failed=$(grep -oE 'The [0-9]+ sanity test\(s\) listed below' "$log" | grep -oE '[0-9]+' | tail -n 1)
  failed=${failed:-0}
  passed=$(( total - failed ))
else
  passed=$(( rc == 0 ? 1 : 0 )); failed=$(( rc == 0 ? 0 : 1 ))
fi
# A non-zero exit always counts as at least one failure.
if [ "$rc" -ne 0 ] && [ "${failed:-0}" -eq 0 ]; then failed=1; fi
echo "$name ${passed:-0} ${failed:-0} ${took}s" >> "$root/.cache/test-results"
echo "=== $name: ${passed:-0} passed, ${failed:-0} failed (${took}s, log: $log)"
exit "$rc"
