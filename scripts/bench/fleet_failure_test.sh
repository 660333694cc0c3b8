#!/usr/bin/env bash
# The fleet benchmark's failure path (ctest bench_fleet_failure_test): a
# component that dies, or RSS past --max-rss-mb, stops scripts/bench/fleet.sh
# at once with exit 3, naming the process and printing its log's tail --
# not a wait until the registration timeout. KPLANE and KPCTL name the
# binaries (as for fleet.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$(mktemp -d /tmp/kplane-fleet-failure-XXXXXX)
trap 'rm -rf "$out"' EXIT
fail=0

# expect NAME WANT_TEXT BOUND_S -- fleet.sh args...
expect() {
  local name=$1 want=$2 bound=$3
  shift 4
  local start rc took
  start=$(date +%s)
  timeout "$bound" bash scripts/bench/fleet.sh --backend embedded --quick \
    --out "$out/$name" "$@" >"$out/$name.out" 2>"$out/$name.err"
  rc=$?
  took=$(($(date +%s) - start))
  if [[ $rc != 3 ]] || ! grep -q -- "$want" "$out/$name.err"; then
    echo "FAIL $name: exit $rc after ${took}s (want 3 and \"$want\"); stderr:"
    cat "$out/$name.err"
    fail=1
  else
    echo "ok   $name: exit 3 after ${took}s: $(grep -m1 -- "$want" "$out/$name.err")"
  fi
}

# The fleet exits at once on a flag it does not know; its log says why.
expect kubeletsim-dies "FAILED: kubeletsim (pid" 60 -- --nodes 3 -- --no-such-flag
grep -q "no-such-flag" "$out/kubeletsim-dies.err" ||
  { echo "FAIL kubeletsim-dies: the log tail does not name the flag"; fail=1; }
# A 1 MB cap: the API server alone is over it while it starts.
expect rss-cap "FAILED: RSS of the processes" 60 -- --nodes 3 --max-rss-mb 1
exit $fail
