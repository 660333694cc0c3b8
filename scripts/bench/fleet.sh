#!/usr/bin/env bash
# How many simulated nodes one `kplane kubeletsim` sustains against one
# `kplane apiserver` with Leases renewed on time (docs/kubeletsim.md,
# "Scale"). Starts the apiserver (embedded store, or remote over a 3-member
# store started with scripts/store-cluster.sh), then the fleet; waits until
# every node is registered, lets it settle, and measures over a window:
# heartbeat lag p50/p99 (from the fleet's histogram, delta over the window),
# lease writes/s, and CPU and RSS of every process.
#
#   scripts/bench/fleet.sh [--nodes N] [--backend embedded|cluster]
#                          [--window SECONDS] [--settle SECONDS]
#                          [--workers W] [-- extra kubeletsim flags]
#
# Prints one result line; everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

nodes=1000
backend=embedded
window=60
settle=20
workers=8
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

bin=build/kplane
[[ -x $bin ]] || { echo "build kplane first" >&2; exit 1; }
dir=$(mktemp -d /tmp/kplane-fleet-bench.XXXXXX)
api_port=$((20000 + RANDOM % 10000))
ctl_port=$((api_port + 1))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ $backend == cluster ]]; then
    scripts/store-cluster.sh stop --dir "$dir/store" >/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

if [[ $backend == cluster ]]; then
  scripts/store-cluster.sh start --dir "$dir/store" --base-port $((api_port + 100)) >"$dir/store.out"
  endpoints=$(grep -o 'http://127.0.0.1:[0-9]*' "$dir/store.out" | sort -u | paste -sd, -)
  store_pids=$(cat "$dir"/store/n*.pid | paste -sd' ' -)
  "$bin" apiserver --storage-backend=remote --etcd-servers="$endpoints" \
    --port "$api_port" >"$dir/api.log" 2>&1 &
else
  store_pids=""
  "$bin" apiserver --data-dir "$dir/api" --port "$api_port" >"$dir/api.log" 2>&1 &
fi
api_pid=$!
pids+=("$api_pid")
for _ in $(seq 1 100); do
  grep -q "serving on" "$dir/api.log" && break
  sleep 0.2
done

"$bin" kubeletsim --server "http://127.0.0.1:$api_port" --nodes "$nodes" \
  --port "$ctl_port" --workers "$workers" --log-level warning "${extra[@]}" \
  >"$dir/sim.log" 2>&1 &
sim_pid=$!
pids+=("$sim_pid")

metric() {  # metric NAME_REGEX -> value (0 if absent)
  { curl -s "http://127.0.0.1:$ctl_port/metrics" || true; } |
    awk -v re="$1" '$1 ~ re && !f {print $2; f=1} END {if (!f) print 0}'
}
start=$(date +%s.%N)
for _ in $(seq 1 600); do
  ready=$(metric '^kubeletsim_nodes\{state="ready"\}$')
  [[ ${ready%.*} -ge $nodes ]] && break
  sleep 0.5
done
registered_in=$(echo "$(date +%s.%N) - $start" | bc)
sleep "$settle"

cpu_ticks() {  # utime+stime of a pid, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
buckets() {
  curl -s "http://127.0.0.1:$ctl_port/metrics" |
    grep '^kubeletsim_heartbeat_lag_seconds_bucket' |
    sed 's/.*le="\([^"]*\)"} \(.*\)/\1 \2/'
}
all_pids="$api_pid $sim_pid $store_pids"
declare -A t0
for p in $all_pids; do t0[$p]=$(cpu_ticks "$p"); done
b0=$(buckets)
w0=$(metric '^kubeletsim_api_writes_total\{operation="lease"\}$')
e0=$(metric '^kubeletsim_api_errors_total\{operation="lease"\}$')
sleep "$window"
b1=$(buckets)
w1=$(metric '^kubeletsim_api_writes_total\{operation="lease"\}$')
e1=$(metric '^kubeletsim_api_errors_total\{operation="lease"\}$')
hz=$(getconf CLK_TCK)

quantiles=$(paste <(echo "$b0") <(echo "$b1") | awk '
  { le[NR] = $1; d[NR] = $4 - $2 }
  END {
    total = d[NR]
    for (q = 1; q <= 2; q++) {
      want = (q == 1 ? 0.5 : 0.99) * total; ans = "n/a"
      for (i = 1; i <= NR; i++) if (d[i] >= want && total > 0) { ans = le[i]; break }
      printf "%s%s", (q == 1 ? "" : " "), ans
    }
  }')
read -r p50 p99 <<<"$quantiles"
lease_rate=$(echo "scale=1; ($w1 - $w0) / $window" | bc)
errors=$(echo "$e1 - $e0" | bc)
cpu_of() { echo "scale=0; 100 * ($(cpu_ticks "$1") - ${t0[$1]}) / $hz / $window" | bc; }
line="nodes=$nodes backend=$backend registered_in=${registered_in%.*}s"
line+=" lag_p50<=${p50}s lag_p99<=${p99}s lease_writes/s=$lease_rate lease_errors=$errors"
line+=" kubeletsim: cpu=$(cpu_of "$sim_pid")% rss=$(rss_mb "$sim_pid")MB"
line+=" apiserver: cpu=$(cpu_of "$api_pid")% rss=$(rss_mb "$api_pid")MB"
i=1
for p in $store_pids; do
  line+=" store$i: cpu=$(cpu_of "$p")% rss=$(rss_mb "$p")MB"
  i=$((i + 1))
done
echo "$line"
