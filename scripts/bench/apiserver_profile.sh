#!/usr/bin/env bash
# Profiles the API server's pod creates at 64 clients (issue 22, "The store
# client over gRPC" in docs/performance.md): starts a 3-member `kplane
# store` and one apiserver over it as scripts/bench/apiserver.sh does, warms
# up, then runs `kpctl bench api create --clients 64` for DURATION while
# `perf record -F 499 --call-graph dwarf` samples the apiserver, and prints
# the apiserver's CPU per create (/proc/<pid>/stat over the run) and its
# threads' context switches per create (/proc/<pid>/task/*/status), summed
# by thread name.
#
#   scripts/bench/apiserver_profile.sh [--etcd-protocol json|grpc]
#       [--duration 8s] [--no-perf] [--base-port P] [--out DIR]
#
# Run it holding the CPU lock, as the other benchmarks. DIR (default
# /tmp/kplane-bench/profile-<time>) gets perf.data (read it with `perf
# report -i DIR/perf.data`), bench.txt (the load tool's output) and
# summary.txt. Ports: members on P+10, P+20, P+30, the apiserver on P+130
# (default P=25570). Needs $KPLANE and $KPCTL (default build/kplane,
# build/cmd/kpctl/kpctl) and perf unless --no-perf.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/lib.sh

proto=""
dur=8s
perf=1
base=25570
out=/tmp/kplane-bench/profile-$(date -u +%Y%m%d-%H%M%S)
while [[ $# -gt 0 ]]; do
  case $1 in
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
if ((perf)) && ! command -v perf >/dev/null; then
  echo "perf is not installed (or pass --no-perf)" >&2
  exit 2
fi
api_extra=()
[[ -n $proto ]] && api_extra+=("--etcd-protocol=$proto")

mkdir -p "$out"
data=$(mktemp -d /tmp/kplane-apiprof.XXXXXX)
api_pid=""
perf_pid=""
cleanup() {
  [[ -n $perf_pid ]] && { kill "$perf_pid" 2>/dev/null || true; }
  if [[ -n $api_pid ]]; then
    kill "$api_pid" 2>/dev/null || true
    wait_gone "$api_pid"
  fi
  scripts/store-cluster.sh stop --dir "$data/store" >/dev/null 2>&1 || true
  wait_gone "${STORE_PIDS[@]:-}"
  rm -rf "$data"
}
trap cleanup EXIT

scripts/store-cluster.sh start --dir "$data/store" --base-port "$base" -- \
  --heartbeat-interval 100 --election-timeout 1000 --snapshot-count 100000 \
  --log-level warning >/dev/null
STORE_PIDS=()
EPS=()
for i in 1 2 3; do
  STORE_PIDS+=("$(cat "$data/store/n$i.pid")")
  EPS+=("http://127.0.0.1:$((base + i * 10))")
done
wait_leader || { echo "the store elected no leader; logs in $data/store" >&2; exit 1; }
# The leader first, as apiserver.sh does.
etcd_servers=${EPS[$LEADER]}
for i in "${!EPS[@]}"; do [[ $i == "$LEADER" ]] || etcd_servers+=",${EPS[$i]}"; done
server=http://127.0.0.1:$((base + 130))
"$KPLANE" apiserver --insecure-http --storage-backend=remote --etcd-servers="$etcd_servers" \
  --port $((base + 130)) --max-watches 20000 --log-level warning \
  --authorization-mode=AlwaysAllow ${api_extra[@]+"${api_extra[@]}"} >"$data/api.log" 2>&1 &
api_pid=$!
for _ in $(seq 1 300); do
  grep -q "serving on" "$data/api.log" && break
  kill -0 "$api_pid" 2>/dev/null || { cat "$data/api.log" >&2; exit 1; }
  sleep 0.1
done
grep -q "serving on" "$data/api.log" || { echo "apiserver did not start" >&2; exit 1; }

threads() {  # tid name voluntary nonvoluntary, one line per thread
  local t
  for t in /proc/$api_pid/task/*; do
    awk -v t="${t##*/}" -v c="$(cat "$t/comm")" \
      '/^voluntary_ctxt_switches/ {v = $2} /^nonvoluntary_ctxt_switches/ {n = $2}
       END {gsub(/ /, "_", c); print t, c, v, n}' "$t/status"
  done
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$api_pid/stat"; }

"$KPCTL" bench api create --namespace warm --clients 64 --duration 2s --threads 2 \
  --server "$server" >/dev/null 2>&1
if ((perf)); then
  # Attaching to ~150 threads takes a few seconds: start first, then load.
  perf record -F 499 --call-graph dwarf,16384 -m 64 -p "$api_pid" -o "$out/perf.data" \
    -- sleep 3600 >"$out/perf.log" 2>&1 &
  perf_pid=$!
  sleep 4
fi
threads >"$data/ctx0"
c0=$(cpu_ticks)
load=$(cut -d' ' -f1-3 /proc/loadavg)
"$KPCTL" bench api create --namespace bench --clients 64 --duration "$dur" --threads 2 \
  --server "$server" >"$out/bench.txt" 2>&1
c1=$(cpu_ticks)
threads >"$data/ctx1"
if [[ -n $perf_pid ]]; then
  # Ending perf's workload (its `sleep`) ends the recording.
  kill "$(pgrep -P "$perf_pid" sleep)" 2>/dev/null || kill -INT "$perf_pid" 2>/dev/null || true
  wait "$perf_pid" || true
  perf_pid=""
fi
ops=$(sed -n 's/^RESULT.* operations=\([0-9]*\).*/\1/p' "$out/bench.txt" | tail -1)
[[ -n $ops && $ops -gt 0 ]] || { echo "the load tool made no pods; see $out/bench.txt" >&2; exit 1; }
{
  echo "protocol ${proto:-default}, load average $load, $(wc -l <"$data/ctx1") threads"
  grep '^RESULT' "$out/bench.txt" | tail -1
  awk -v t="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" -v o="$ops" \
    'BEGIN {printf "apiserver CPU per create: %.3f ms\n", t * 1000 / hz / o}'
  awk -v o="$ops" '
    NR == FNR {v0[$1] = $3; n0[$1] = $4; next}
    {name = $2; sub(/[0-9]+$/, "#", name); v[name] += $3 - v0[$1]; n[name] += $4 - n0[$1];
     tv += $3 - v0[$1]; tn += $4 - n0[$1]; c[name]++}
    END {printf "context switches per create: %.2f voluntary, %.2f involuntary\n", tv / o, tn / o;
         fflush();
         for (k in v) if (v[k] + n[k] > 0)
           printf "  %-18s %3d threads  %.3f voluntary  %.3f involuntary\n", k, c[k], v[k] / o, n[k] / o | "sort -k4 -nr"
         close("sort -k4 -nr")}
  ' "$data/ctx0" "$data/ctx1"
} | tee "$out/summary.txt"
