#!/usr/bin/env bash
# The store leader's CPU per range of a 1,000-key prefix over gRPC (or the
# JSON gateway), for one or more kplane binaries in turn (an A/B on this
# noisy machine: pass the binaries alternated, e.g. A B A B).
#
#   scripts/bench/grpc_range_cpu.sh [--runs N] [--duration 6s]
#                                   [--protocol grpc|json] [--base-port P]
#                                   BINARY...
#
# For each BINARY: a 3-member `kplane store` (lib.sh start_bench_store:
# store.sh's settings), 1,000 keys of 256-byte values under
# /registry/configmaps/range1000/, a 2 s warm-up, then N runs (default 3)
# of `kpctl store bench range --protocol grpc|json --clients 16 --range-prefix`
# to the leader; one line per run: ranges/s, p99, the leader's and the load
# tool's CPU per range (ms), the leader's minor page faults per range (a
# heap that is given back to the kernel and faulted in again shows here) and
# its resident memory after the run.
# KPCTL= names the load tool (default build/cmd/kpctl/kpctl).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
source scripts/bench/lib.sh

runs=3 duration=6s base=32370 protocol=grpc bins=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --base-port) base=$2; shift 2 ;;
    --protocol) protocol=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    -*) echo "unknown argument: $1" >&2; exit 2 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[[ ${#bins[@]} -gt 0 ]] || { echo "name at least one kplane binary" >&2; exit 2; }
KPCTL=${KPCTL:-$PWD/build/cmd/kpctl/kpctl}
[[ -x $KPCTL ]] || { echo "missing $KPCTL" >&2; exit 1; }
dir=$(mktemp -d /tmp/kplane-grpc-range.XXXXXX)
trap 'stop_bench_servers; rm -rf "$dir"' EXIT

prefix=/registry/configmaps/range1000/
for bin in "${bins[@]}"; do
  KPLANE=$bin
  export KPLANE
  rm -rf "$dir/store"
  start_bench_store "$dir/store" "$base" >/dev/null ||
    { echo "$bin: the store did not start (logs in $dir/store)" >&2; exit 1; }
  leader_pid=${STORE_PIDS[$LEADER]}
  "$KPCTL" store bench range --protocol "$protocol" --endpoints "$LEADER_EP" \
    --fill 1000 --key-space 1000 --key-prefix "$prefix" --total 1 >/dev/null
  "$KPCTL" store bench range --protocol "$protocol" --endpoints "$LEADER_EP" \
    --clients 16 --duration 2s --range-prefix --key-prefix "$prefix" \
    --threads 2 >/dev/null
  for _ in $(seq 1 "$runs"); do
    faults=$(awk '{print $10}' "/proc/$leader_pid/stat")
    line=$("$KPCTL" store bench range --protocol "$protocol" --endpoints "$LEADER_EP" \
      --clients 16 --duration "$duration" --range-prefix --key-prefix "$prefix" \
      --server-pids "$leader_pid" --threads 2 | grep RESULT)
    faults=$(($(awk '{print $10}' "/proc/$leader_pid/stat") - faults))
    ops=$(field operations "$line")
    awk -v b="$bin" -v l="$(load1)" -v r="$(field ops_per_s "$line")" \
      -v p="$(field p99_ms "$line")" -v s="$(field server_cpu_s "$line")" \
      -v c="$(field client_cpu_s "$line")" -v n="$ops" -v f="$faults" \
      -v proto="$protocol" \
      -v rss="$(awk '/^VmRSS/ {print $2}' "/proc/$leader_pid/status")" \
      'BEGIN { printf "%s %s load %s ranges/s %s p99_ms %s leader_ms/range %.3f client_ms/range %.3f minflt/range %.1f leader_rss_mb %.1f\n", b, proto, l, r, p, s * 1000 / n, c * 1000 / n, f / n, rss / 1024 }'
  done
  stop_bench_servers
done
