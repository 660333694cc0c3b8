#!/usr/bin/env bash
# Profiles the API server at 64 clients (issue 22: "The store client over
# gRPC" and "Consistent LIST through the remote store" in
# docs/performance.md): starts a 3-member `kplane store` and one apiserver
# over it (scripts/bench/lib.sh, as scripts/bench/apiserver.sh does), warms
# up, then runs the workload for DURATION while `perf record -F 499
# --call-graph dwarf` samples the apiserver and the store's leader, and
# prints CPU per operation (/proc/<pid>/stat over the run) of the apiserver,
# of each member and of the whole machine (/proc/stat: is it saturated?),
# the apiserver's and the leader's minor page faults per operation,
# and the apiserver's context switches per operation
# (/proc/<pid>/task/*/status), summed by thread name.
#   create  `kpctl bench api create` (pods);
#   list    `kpctl bench api list --list-query limit=500` of a 100-pod
#           namespace, as `kubectl get pods` asks (a consistent LIST: the
#           store's revision, then the watch cache); also the apiserver's
#           watch-cache consistent-read and read-wait metrics over the run.
#
#   scripts/bench/apiserver_profile.sh [--workload create|list]
#       [--clients 64] [--etcd-protocol json|grpc] [--duration 8s]
#       [--no-perf] [--base-port P] [--out DIR]
#
# Run it holding the CPU locks, as the other benchmarks. DIR (default
# /tmp/kplane-bench/profile-<time>) gets perf.data (the apiserver; read it
# with `perf report -i DIR/perf.data`), perf-store.data (the leader),
# bench.txt (the load tool's output) and summary.txt. Ports: members on
# P+10, P+20, P+30, the apiserver on P+130 (default P=25570). Needs $KPLANE
# and $KPCTL (default build/kplane, build/cmd/kpctl/kpctl) and perf unless
# --no-perf.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh

proto=""
workload=create
clients=64
dur=8s
perf=1
base=25570
out=/tmp/kplane-bench/profile-$(date -u +%Y%m%d-%H%M%S)
while [[ $# -gt 0 ]]; do
  case $1 in
    --workload) workload=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --etcd-protocol) proto=$2; shift 2 ;;
    --duration) dur=$2; shift 2 ;;
    --no-perf) perf=0; shift ;;
    --base-port) base=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
need_binaries
[[ $workload == create || $workload == list ]] ||
  { echo "--workload: create or list, not $workload" >&2; exit 2; }
if ((perf)) && ! command -v perf >/dev/null; then
  echo "perf is not installed (or pass --no-perf)" >&2
  exit 2
fi
api_extra=()
[[ -n $proto ]] && api_extra+=("--etcd-protocol=$proto")

mkdir -p "$out"
data=$(mktemp -d /tmp/kplane-apiprof.XXXXXX)
perf_pids=()
cleanup() {
  local p
  for p in ${perf_pids[@]+"${perf_pids[@]}"}; do kill "$p" 2>/dev/null || true; done
  stop_bench_servers
  rm -rf "$data"
}
trap cleanup EXIT

start_bench_store "$data/store" "$base" >/dev/null ||
  { echo "the store elected no leader; logs in $data/store" >&2; exit 1; }
server=http://127.0.0.1:$((base + 130))
start_bench_apiserver "$data/api.log" $((base + 130)) --insecure-http \
  ${api_extra[@]+"${api_extra[@]}"} || { echo "apiserver did not start" >&2; exit 1; }
api_pid=$API_PID
leader_pid=${STORE_PIDS[$LEADER]}

threads() {  # tid name voluntary nonvoluntary, one line per thread
  local t
  for t in /proc/$api_pid/task/*; do
    awk -v t="${t##*/}" -v c="$(cat "$t/comm")" \
      '/^voluntary_ctxt_switches/ {v = $2} /^nonvoluntary_ctxt_switches/ {n = $2}
       END {gsub(/ /, "_", c); print t, c, v, n}' "$t/status"
  done
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Minor page faults: memory the allocator gave back to the kernel and faulted
# in again shows here (docs/performance.md, "The allocator keeps its heap").
minflt() { awk '{print $10}' "/proc/$1/stat"; }
# The machine's busy and total ticks (all CPUs) from /proc/stat.
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8}' /proc/stat; }
# The apiserver's watch-cache read metrics (pods), summed over labels.
cache_metrics() {
  curl -s "$server/metrics" | awk '
    /^apiserver_watch_cache_consistent_read_total.*resource="pods"/ {
      if ($0 ~ /fallback="true"/) f += $NF; else c += $NF }
    /^apiserver_watch_cache_read_wait_seconds_count.*resource="pods"/ {w += $NF}
    END {printf "%d %d %d\n", c, f, w}'
}
run_load() {  # run_load NAMESPACE DURATION: the workload, its output on stdout
  if [[ $workload == create ]]; then
    "$KPCTL" bench api create --namespace "$1" --clients "$clients" --duration "$2" \
      --threads 2 --server "$server"
  else
    "$KPCTL" bench api list --namespace list100 --list-query limit=500 \
      --clients "$clients" --duration "$2" --threads 2 --server "$server"
  fi
}

if [[ $workload == list ]]; then
  "$KPCTL" bench api get --namespace list100 --fixture l --fill 100 --pods 100 \
    --clients 1 --total 1 --server "$server" >/dev/null 2>&1
fi
run_load warm 2s >/dev/null 2>&1
if ((perf)); then
  # Attaching to ~150 threads takes a few seconds: start first, then load.
  # Ending perf's workload (its `sleep`) ends the recording.
  perf record -F 499 --call-graph dwarf,16384 -m 64 -p "$api_pid" -o "$out/perf.data" \
    -- sleep 3600 >"$out/perf.log" 2>&1 &
  perf_pids+=($!)
  perf record -F 499 --call-graph dwarf,16384 -m 64 -p "$leader_pid" -o "$out/perf-store.data" \
    -- sleep 3600 >"$out/perf-store.log" 2>&1 &
  perf_pids+=($!)
  sleep 4
fi
threads >"$data/ctx0"
a0=$(cpu_ticks "$api_pid")
af0=$(minflt "$api_pid") lf0=$(minflt "${STORE_PIDS[$LEADER]}")
s0=()
for p in "${STORE_PIDS[@]}"; do s0+=("$(cpu_ticks "$p")"); done
read -r m0 t0 <<<"$(machine_ticks)"
[[ $workload == list ]] && read -r cr0 fb0 wt0 <<<"$(cache_metrics)"
load=$(cut -d' ' -f1-3 /proc/loadavg)
run_load bench "$dur" >"$out/bench.txt" 2>&1
a1=$(cpu_ticks "$api_pid")
af1=$(minflt "$api_pid") lf1=$(minflt "${STORE_PIDS[$LEADER]}")
s1=()
for p in "${STORE_PIDS[@]}"; do s1+=("$(cpu_ticks "$p")"); done
read -r m1 t1 <<<"$(machine_ticks)"
[[ $workload == list ]] && read -r cr1 fb1 wt1 <<<"$(cache_metrics)"
threads >"$data/ctx1"
for p in ${perf_pids[@]+"${perf_pids[@]}"}; do
  kill "$(pgrep -P "$p" sleep)" 2>/dev/null || kill -INT "$p" 2>/dev/null || true
  wait "$p" || true
done
perf_pids=()
ops=$(sed -n 's/^RESULT.* operations=\([0-9]*\).*/\1/p' "$out/bench.txt" | tail -1)
[[ -n $ops && $ops -gt 0 ]] || { echo "the load tool made no $workload calls; see $out/bench.txt" >&2; exit 1; }
hz=$(getconf CLK_TCK)
per_op() { awk -v t="$1" -v hz="$hz" -v o="$ops" 'BEGIN {printf "%.3f", t * 1000 / hz / o}'; }
{
  echo "workload $workload at $clients clients, protocol ${proto:-default}, load average $load, $(wc -l <"$data/ctx1") apiserver threads"
  grep '^RESULT' "$out/bench.txt" | tail -1
  echo "CPU ms per $workload: apiserver $(per_op $((a1 - a0)))"
  for i in "${!STORE_PIDS[@]}"; do
    role=follower
    [[ $i == "$LEADER" ]] && role=leader
    echo "  store member $((i + 1)) ($role) $(per_op $((s1[i] - s0[i])))"
  done
  awk -v a="$((af1 - af0))" -v l="$((lf1 - lf0))" -v o="$ops" -v w="$workload" \
    'BEGIN {printf "minor page faults per %s: apiserver %.2f, store leader %.2f\n", w, a / o, l / o}'
  awk -v b="$((m1 - m0))" -v t="$((t1 - t0))" -v n="$(nproc)" \
    'BEGIN {if (t > 0) printf "machine busy: %.0f%% of %d CPUs\n", b * 100 / t, n}'
  if [[ $workload == list ]]; then
    echo "watch cache (pods) over the run: $((cr1 - cr0)) consistent reads from the cache," \
      "$((fb1 - fb0)) fell back to the store, $((wt1 - wt0)) waited for the cache"
  fi
  awk -v o="$ops" -v w="$workload" '
    NR == FNR {v0[$1] = $3; n0[$1] = $4; next}
    {name = $2; sub(/[0-9]+$/, "#", name); v[name] += $3 - v0[$1]; n[name] += $4 - n0[$1];
     tv += $3 - v0[$1]; tn += $4 - n0[$1]; c[name]++}
    END {printf "apiserver context switches per %s: %.2f voluntary, %.2f involuntary\n", w, tv / o, tn / o;
         fflush();
         for (k in v) if (v[k] + n[k] > 0)
           printf "  %-18s %3d threads  %.3f voluntary  %.3f involuntary\n", k, c[k], v[k] / o, n[k] / o | "sort -k4 -nr"
         close("sort -k4 -nr")}
  ' "$data/ctx0" "$data/ctx1"
} | tee "$out/summary.txt"
