#!/usr/bin/env bash
# Where a put's server CPU goes (issue 17, docs/performance.md "Why the gRPC
# put ratio stays near 1.2x"): starts a 3-member kplane store on loopback
# (the store.sh settings), drives `kpctl store bench put` at the leader,
# and meanwhile records the three members with `perf record -g` and counts
# every thread's context switches (/proc/<pid>/task/*/status). Prints the
# RESULT line, CPU samples per thread name (three members summed), context
# switches per put per member and thread, and the WAL fsync average and
# entries per fsync from the members' /metrics.
#
#   scripts/bench/profile_put.sh [--protocol grpc|json] [--clients N]
#                                [--key-space N] [--out DIR] [--port-offset N]
#
# --key-space: keys drawn from [0, N) (default 100,000, the etcd benchmark's;
# a 6 s run then mostly creates keys, a smaller space mostly overwrites).
#
# Needs perf (root or perf_event_paranoid <= 1 for other processes' samples;
# the script runs as the members' owner, which suffices at 2). Run it with
# the machine's two CPU locks held, as the other benchmarks:
#   flock -o /tmp/kplane-cpu-build.lock flock -o /tmp/kplane-cpu-test.lock \
#     scripts/bench/profile_put.sh --protocol grpc
# PERF_CALLGRAPH (default -g, frame pointers) sets perf's call-graph mode;
# `PERF_CALLGRAPH="--call-graph dwarf,16384"` gives whole stacks through
# the -O1 binaries' frames (larger perf.data, slower report).
# DIR (default /tmp/kplane-profile/<time>) keeps perf.data for
# `perf report -i DIR/perf.data`; the members' data directories are removed.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh

protocol=grpc
clients=64
key_space=100000
port_offset=0
out=/tmp/kplane-profile/$(date -u +%Y%m%d-%H%M%S)
while [[ $# -gt 0 ]]; do
  case $1 in
    --protocol) protocol=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --key-space) key_space=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --port-offset) port_offset=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
need_binaries
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }
mkdir -p "$out"

CURL_TLS=()
EPS=()
PIDS=()
ic=""
for j in 1 2 3; do ic+="${ic:+,}n$j=http://127.0.0.1:$((14371 + port_offset + j * 10))"; done
for i in 1 2 3; do
  "$KPLANE" store --name "n$i" --data-dir "$out/data/n$i" \
    --listen-client-urls "http://127.0.0.1:$((14370 + port_offset + i * 10))" \
    --listen-peer-urls "http://127.0.0.1:$((14371 + port_offset + i * 10))" \
    --initial-cluster "$ic" --heartbeat-interval 100 --election-timeout 1000 \
    --snapshot-count 100000 --log-level warning >>"$out/n$i.log" 2>&1 &
  PIDS+=($!)
  EPS+=("http://127.0.0.1:$((14370 + port_offset + i * 10))")
done
cleanup() {
  kill "${PIDS[@]}" 2>/dev/null || true
  wait_gone "${PIDS[@]}"
  rm -rf "$out/data"
}
trap cleanup EXIT
wait_leader || { echo "no leader; logs in $out" >&2; exit 1; }
pids_csv=$(IFS=,; echo "${PIDS[*]}")

# One line per thread: pid tid name voluntary nonvoluntary.
switches() {
  local p t
  for p in "${PIDS[@]}"; do
    for t in /proc/"$p"/task/*; do
      echo "$p ${t##*/} $(cat "$t/comm" | tr ' ' _) $(awk '/^(non)?voluntary_ctxt/ {printf "%s ", $2}' "$t/status")"
    done
  done
}
switches >"$out/switches-before.txt"
# Record 3 s in the middle of a 1 s warm-up + 5 s run.
# PERF_CALLGRAPH is left unquoted on purpose: "--call-graph dwarf,16384"
# is two words.
# shellcheck disable=SC2086
(sleep 1.5; perf record -F 999 ${PERF_CALLGRAPH:--g} -p "$pids_csv" -o "$out/perf.data" -- sleep 3 >/dev/null 2>&1) &
perf_pid=$!
line=$("$KPCTL" store bench put --protocol "$protocol" --endpoints "${EPS[$LEADER]}" \
  --clients "$clients" --duration 5s --warmup 1s --val-size 256 \
  --key-prefix /registry/configmaps/default/ --server-pids "$pids_csv" \
  --threads 2 --key-space "$key_space" --label kplane | grep '^RESULT')
wait "$perf_pid" || true
switches >"$out/switches-after.txt"
for i in 1 2 3; do curl -s -m 5 "${EPS[$((i - 1))]}/metrics" >"$out/metrics-n$i.txt" || true; done

echo "$line"
ops_per_s=$(field ops_per_s "$line")
echo "leader: n$((LEADER + 1)) (pid ${PIDS[$LEADER]})"
echo
echo "CPU per put by thread name, three members summed (perf samples at 999 Hz over 3 s; ~$(awk -v o="$ops_per_s" 'BEGIN{printf "%d", o*3}') puts):"
perf report -i "$out/perf.data" --no-children -g none --sort comm -n --stdio 2>/dev/null |
  awk -v n="$(awk -v o="$ops_per_s" 'BEGIN{print o*3}')" '/^ +[0-9.]+%/ {printf "  %-16s %6.1f%%  %5.0f us/put\n", $3, $1, $2*1001/n}'
echo
echo "context switches per put (whole run incl. warm-up: ~$(awk -v o="$ops_per_s" 'BEGIN{printf "%d", o*6}') puts; threads above 0.05):"
join <(awk '{print $1"/"$2, $3, $4, $5}' "$out/switches-before.txt" | sort) \
     <(awk '{print $1"/"$2, $4, $5}' "$out/switches-after.txt" | sort) |
  awk -v n="$(awk -v o="$ops_per_s" 'BEGIN{print o*6}')" -v leader="${PIDS[$LEADER]}" '
    { split($1, a, "/"); k = (a[1] == leader ? "leader" : "follower " a[1]) " " $2
      s[k] += ($5 - $3) + ($6 - $4) }
    END { for (k in s) if (s[k] / n > 0.05) printf "  %-36s %.2f\n", k, s[k] / n }' | sort
echo
for i in 1 2 3; do
  awk -v m="n$i" '/^etcd_disk_wal_fsync_duration_seconds_sum/ {s=$2}
    /^etcd_disk_wal_fsync_duration_seconds_count/ {c=$2}
    /^kplane_raft_ready_entries_sum/ {e=$2}
    END { if (c > 0) printf "%s: WAL fsync %.2f ms average, %.1f entries per fsync\n", m, s*1000/c, e/c }' "$out/metrics-n$i.txt"
done
echo "perf data: $out/perf.data (perf report -i $out/perf.data --sort comm,sym)"
