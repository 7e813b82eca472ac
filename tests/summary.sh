#!/usr/bin/env bash
# Sum the suites recorded by tests/suite.sh; the last line is "N passed, N failed".
set -u
results=${1:?results file}
[ -s "$results" ] || { echo "no suite ran"; echo "0 passed, 1 failed"; exit 1; }
printf '%-28s %8s %8s %8s\n' suite passed failed time
awk '{ printf "%-28s %8d %8d %8s\n", $1, $2, $3, $4; p += $2; f += $3 } END { }' "$results"
# Where each failed suite first failed, in a few lines just above the last one: a CI page that shows only the
# end of the output still says why (the whole log is in .cache/test-logs/NAME.log).
logs=$(dirname "$results")/test-logs
while read -r name _ failed _; do
  [ "$failed" -gt 0 ] || continue
  why=$(sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^[[:space:]]*[│|]*[[:space:]]*//' "$logs/$name.log" 2>/dev/null \
    | awk '/^(fatal: |failed: \[|ERROR|E   |Failed: )/ && !/\.\.\.ignoring/ { start = NR; block = "" } start && NR < start + 12 { block = block " " $0 }
           END { print block }' | tr -s ' ' | cut -c 1-600)
  echo "why $name failed: ${why:-see $logs/$name.log}"
done < "$results"
read -r passed failed < <(awk '{ p += $2; f += $3 } END { print p+0, f+0 }' "$results")
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
