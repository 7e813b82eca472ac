#!/usr/bin/env bash
# Sum the suites recorded by tests/suite.sh; the last line is "N passed, N failed".
set -u
results=${1:?results file}
[ -s "$results" ] || { echo "no suite ran"; echo "0 passed, 1 failed"; exit 1; }
printf '%-28s %8s %8s %8s\n' suite passed failed time
awk '{ printf "%-28s %8d %8d %8s\n", $1, $2, $3, $4; p += $2; f += $3 } END { }' "$results"
read -r passed failed < <(awk '{ p += $2; f += $3 } END { print p+0, f+0 }' "$results")
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
