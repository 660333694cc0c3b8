#!/usr/bin/env bash
# Put throughput to the leader of a 3-member kplane store (issue 9's "put
# c=N leader" rows, kplane only): for each run a fresh cluster
# (scripts/store-cluster.sh) with store.sh's settings (heartbeat 100 ms,
# election 1000 ms, snapshot-count 100000, fsync on), `kpctl store bench
# put` to the leader, then a table of ops/s, p99 and server CPU per op with
# the load average at each run.
#
#   scripts/bench/put-leader.sh [--clients 1,64] [--runs 3] [--duration 10s]
#                               [--base-port 22370] [--dir DIR]
#                               [--perf SECONDS]   # perf record the leader
#
# --perf records the leader with `perf record -F 499 -g` for SECONDS during
# the first run at the highest client count and prints the top of
# `perf report --no-children` (the data stays in DIR/perf.data).
# Ports: member i serves clients on P+i*10 and peers on P+i*10+1 (the default
# base 22370 stays clear of store.sh's 12370 and the ephemeral range).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh

clients=1,64
runs=3
dur=10s
base=22370
dir=/tmp/kplane-put-leader.$$
perf_s=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --clients) clients=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --duration) dur=$2; shift 2 ;;
    --base-port) base=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --perf) perf_s=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
need_binaries
mkdir -p "$dir"

# The cluster: scripts/store-cluster.sh with store.sh's settings.
PIDS=()
EPS=()
stop_cluster() {
  scripts/store-cluster.sh stop --dir "$dir/data" >/dev/null 2>&1 || true
  wait_gone "${PIDS[@]:-}"
  PIDS=()
}
# The members' data goes at exit; bench.err and perf.data stay in DIR.
trap 'stop_cluster; rm -rf "$dir/data"' EXIT

start_cluster() {
  stop_cluster
  rm -rf "$dir/data"
  KPLANE=$KPLANE scripts/store-cluster.sh start --dir "$dir/data" --base-port "$base" -- \
    --heartbeat-interval 100 --election-timeout 1000 --snapshot-count 100000 \
    --log-level warning >/dev/null
  EPS=()
  local i
  for i in 1 2 3; do
    PIDS+=("$(cat "$dir/data/n$i.pid")")
    EPS+=("http://127.0.0.1:$((base + i * 10))")
  done
}

max_c=$(tr , '\n' <<<"$clients" | sort -n | tail -1)
rows=()
IFS=, read -r -a cs <<<"$clients"
for c in "${cs[@]}"; do
  for r in $(seq 1 "$runs"); do
    start_cluster
    wait_leader || { echo "no leader; logs in $dir/data" >&2; exit 1; }
    pids=$(IFS=,; echo "${PIDS[*]}")
    perf_pid=""
    if ((perf_s > 0)) && [[ $c == "$max_c" && $r == 1 ]]; then
      (sleep 2; perf record -F 499 -g -o "$dir/perf.data" -p "${PIDS[$LEADER]}" \
        -- sleep "$perf_s" >/dev/null 2>&1) &
      perf_pid=$!
    fi
    l0=$(load1)
    line=$("$KPCTL" store bench put --endpoints "${EPS[$LEADER]}" --clients "$c" \
      --duration "$dur" --warmup 1s --val-size 256 \
      --key-prefix /registry/configmaps/default/ --server-pids "$pids" \
      --threads 2 --label kplane 2>>"$dir/bench.err" | grep '^RESULT' | tail -1) || true
    [[ -n $perf_pid ]] && wait "$perf_pid"
    l1=$(load1)
    ops=$(field ops_per_s "$line")
    cpu=$(awk -v s="$(field server_cpu_s "$line")" -v o="$ops" -v d="$(field seconds "$line")" \
      'BEGIN{if (o > 0) printf "%.0f", s*1e6/(o*d); else print "-"}')
    rows+=("$(printf '| put c=%s leader | %s | %s | %s | %s-%s | %s |' \
      "$c" "${ops:-FAILED}" "$(field p99_ms "$line")" "$cpu" "$l0" "$l1" "$(date -u +%H:%M:%S)")")
    echo "${rows[-1]}" >&2
  done
done
stop_cluster

echo "| row | ops/s | p99 ms | server CPU us/op | load avg (start-end) | UTC end |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
if [[ -f $dir/perf.data ]]; then
  echo
  echo "leader profile ($dir/perf.data), top self-time symbols:"
  perf report -i "$dir/perf.data" --no-children --sort sym --stdio 2>/dev/null |
    grep -E '^ +[0-9]' | sed -n '1,25p' || true
fi
