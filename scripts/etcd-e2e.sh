#!/usr/bin/env bash
# etcd 3.4's own end-to-end suite (tests/e2e in Debian's golang-etcd-server-dev)
# as a yardstick for `kplane store`: builds the suite's test binary once into a
# cache dir, puts an `etcd` that execs `kplane store "$@"` (or the real etcd)
# and the real etcdctl in a bin dir, and runs the chosen tests one at a time,
# each with a time limit, printing PASS/FAIL/SKIP per test and the totals.
# Not part of CI (hours for the whole suite); see docs/store.md.
#
#   scripts/etcd-e2e.sh [--etcd] [--kplane PATH] [--cache DIR] [--timeout SECS]
#                       [--list] [REGEX]
#     --etcd        run against the real etcd 3.4 (the reference)
#     --kplane PATH the kplane binary (default: build-test/kplane, build/kplane)
#     --cache DIR   test binary, bin dirs, logs (default /tmp/kplane-etcd-e2e)
#     --timeout S   per-test limit in seconds (default 120)
#     --list        print the chosen tests and exit
#     REGEX         test names to run (grep -E; default: every test but the
#                   v2-API ones, ^TestCtlV2 and ^TestV2, which are out of scope)
# The suite uses fixed ports from 20000, so run one copy at a time. Results:
# <cache>/<target>/results.txt, one log per test in <cache>/<target>/logs/.
set -euo pipefail

target=kplane
kplane=""
cache=/tmp/kplane-etcd-e2e
limit=120
list=0
regex='.*'
while [ $# -gt 0 ]; do
  case "$1" in
    --etcd) target=etcd ;;
    --kplane) kplane="$2"; shift ;;
    --cache) cache="$2"; shift ;;
    --timeout) limit="$2"; shift ;;
    --list) list=1 ;;
    -h|--help) sed -n 2,22p "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) regex="$1" ;;
  esac
  shift
done

gopath=/usr/share/gocode
suite="$gopath/src/go.etcd.io/etcd/tests/e2e"
certs="$gopath/src/go.etcd.io/etcd/integration/fixtures"
command -v go >/dev/null || { echo "go is not installed (apt-get install golang-go)" >&2; exit 2; }
[ -d "$suite" ] || { echo "$suite missing (apt-get install golang-etcd-server-dev)" >&2; exit 2; }
[ -x /usr/bin/etcdctl ] || { echo "etcdctl missing (apt-get install etcd-client)" >&2; exit 2; }

mkdir -p "$cache"
testbin="$cache/e2e.test"
if [ ! -x "$testbin" ]; then
  echo "building etcd's e2e suite into $testbin"
  (cd "$suite" && GO111MODULE=off GOPATH="$gopath" GOCACHE="$cache/gocache" GOFLAGS= \
    go test -c -o "$testbin.tmp" . && mv "$testbin.tmp" "$testbin")
fi

work="$cache/$target"
bindir="$work/bin"
rm -rf "$work/logs" "$work/run"
mkdir -p "$bindir" "$work/logs" "$work/run"
# The JWT tests (configJWT) name their keys relative to the suite's
# directory, ../../integration/fixtures/...; each test runs in
# $work/run/<test>, so $work/integration must be the fixtures' parent.
ln -sfn "$gopath/src/go.etcd.io/etcd/integration" "$work/integration"
ln -sf /usr/bin/etcdctl "$bindir/etcdctl"
if [ "$target" = etcd ]; then
  [ -x /usr/bin/etcd ] || { echo "/usr/bin/etcd missing (apt-get install etcd-server)" >&2; exit 2; }
  ln -sf /usr/bin/etcd "$bindir/etcd"
else
  root="$(cd "$(dirname "$0")/.." && pwd)"
  for k in "$kplane" "$root/build-test/kplane" "$root/build/kplane"; do
    if [ -n "$k" ] && [ -x "$k" ]; then kplane="$(cd "$(dirname "$k")" && pwd)/$(basename "$k")"; break; fi
  done
  [ -n "$kplane" ] && [ -x "$kplane" ] || { echo "no kplane binary (--kplane PATH)" >&2; exit 2; }
  printf '#!/bin/sh\nexec %q store "$@"\n' "$kplane" >"$bindir/etcd"
  chmod +x "$bindir/etcd"
fi

mapfile -t tests < <("$testbin" -test.list '.*' | grep -E '^Test' | grep -E "$regex" |
  grep -Ev '^(TestCtlV2|TestV2)' || true)
if [ "$list" = 1 ]; then printf '%s\n' "${tests[@]}"; exit 0; fi
echo "running ${#tests[@]} tests against $target ($bindir/etcd), ${limit}s each"

# Kills what a test left behind: its servers run in their own sessions (the
# suite starts them on a pseudo-terminal), so they are found by their
# working directory, the test's own run dir, and killed by pid.
reap() {
  local dir="$1" p
  for p in /proc/[0-9]*; do
    if [ "$(readlink "$p/cwd" 2>/dev/null)" = "$dir" ]; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
}

pass=0 fail=0 skip=0
results="$work/results.txt"
: >"$results"
for t in "${tests[@]}"; do
  dir="$work/run/$t"
  mkdir -p "$dir"
  log="$work/logs/$t.log"
  start=$(date +%s)
  set +e
  (cd "$dir" && exec timeout -s KILL "$limit" "$testbin" -test.run "^$t\$" -test.v \
    -bin-dir "$bindir" -cert-dir "$certs") >"$log" 2>&1
  rc=$?
  set -e
  reap "$dir"
  secs=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ] && grep -q -- "--- SKIP: $t " "$log"; then
    verdict=SKIP; skip=$((skip + 1))
  elif [ $rc -eq 0 ]; then
    verdict=PASS; pass=$((pass + 1))
  else
    verdict=FAIL; fail=$((fail + 1))
    [ $rc -eq 137 ] && echo "(killed after ${limit}s)" >>"$log"
  fi
  printf '%-4s %-55s %4ss\n' "$verdict" "$t" "$secs" | tee -a "$results"
  rm -rf "$dir"
done
printf 'total %d: %d passed, %d failed, %d skipped (%s; logs in %s)\n' \
  "${#tests[@]}" "$pass" "$fail" "$skip" "$target" "$work/logs" | tee -a "$results"
