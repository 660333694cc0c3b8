#!/usr/bin/env bash
# Fleet scale (issue 9, "Fleet scale"; docs/performance.md, "The fleet"):
# for each N, the whole control plane as separate processes -- a 3-member
# `kplane store` (or the apiserver's embedded store), one `kplane apiserver`,
# one `kplane controller-manager`, one `kplane kubeletsim --nodes N` with
# Leases renewed every 10 s -- then:
#   1. waits until every node is registered (the fleet's metric) and the API
#      server lists N nodes with Ready=True;
#   2. settles, then measures over a window: heartbeat lag p50/p99 (delta
#      of the fleet's lag histogram over the window: bucket upper bounds),
#      the exact p50/p99 of every node's last renewal lag (one sample per
#      node, from the fleet's /nodes), lease writes/s against the due rate,
#      CPU % of one core and RSS of every process, and nodes the node
#      lifecycle controller marked not Ready while their fleet was running
#      (listed at the end of the window, and its NotReady log lines since
#      the start, registration included);
#   3. stops one node (`kpctl sim stop-node`) and times, through a watch on
#      that Node at the API server, how long until its Ready condition is no
#      longer True, from the stop and from the Lease's last renewTime; the
#      latter must stay within grace + one monitor period (the controller
#      manager's --node-monitor-grace-period / --node-monitor-period).
# With --pods P, between 1. and 2.: once the nodes are registered, creates
# ceil(P / --pods-per-deployment) Deployments (that many replicas each, the
# last one the rest; namespace default, one container, no resource
# requests) and times until P pods are Running as the API server lists
# them (a LIST with fieldSelector status.phase=Running, asked once the
# fleet's own count says P pods are started, so big LISTs do not slow the
# pod ramp); reports that time, pods/s, and the kubelet events the fleet
# wrote meanwhile (events_recorded_total: created + patched / dropped). The
# pods stay, so the window measures heartbeats next to P running pods.
# A row passes when every node registered, lag p99 <= 1 s, no healthy node
# went NotReady and the stopped node was detected within the bound (and,
# with --pods, all P pods were Running within --pods-timeout). The run
# stops at the first N that fails unless --all.
# Node pod CIDRs come from the controller manager's node IPAM
# (--allocate-node-cidrs): --cluster-cidr 10.0.0.0/P with /24 per node, P
# the longest prefix with room for N nodes (at most /16 .. /8: 256 .. 65,536
# nodes), unless --cluster-cidr / --node-cidr-mask-size say otherwise.
# If any process it started dies (a store member, the apiserver, the
# controller manager, the fleet), or their RSS together passes --max-rss-mb
# (default: half of MemTotal), the run stops at once: it names the process,
# prints its log's tail and exits 3.
#
#   scripts/bench/fleet.sh [--nodes 1000,5000,10000] [--quick] [--all]
#       [--backend cluster|embedded] [--window S] [--settle S]
#       [--workers W] [--api-connections C] [--lease-renew-interval 10s]
#       [--grace 40s] [--monitor-period 5s] [--out DIR]
#       [--cluster-cidr CIDR] [--node-cidr-mask-size 24] [--max-rss-mb MB]
#       [--pods P] [--pods-per-deployment 1000] [--pods-timeout S]
#       [--apiserver-flag F]... [--store-flag F]... [--controller-manager-flag F]...
#       [--at-window-end CMD]
#       [--etcd-protocol json|grpc]
#       [-- extra kubeletsim flags, e.g. --record-events=false]
#
# --apiserver-flag / --store-flag / --controller-manager-flag: one more flag
# for the apiserver / every store member / the controller manager
# (repeatable), e.g. --apiserver-flag
# --watch-cache-history-window=0. --at-window-end CMD: runs CMD (through
# bash) right after the window is measured, before the node is stopped,
# with FLEET_DIR, API_URL, SIM_URL, API_PID, CM_PID, SIM_PID, STORE_PIDS
# and STORE_EPS in its environment; its output goes to DIR/n<N>/at-window-end.out
# (scripts/bench/fleet_memory.sh breaks the processes' memory down).
# --etcd-protocol: the apiserver's store client with the 3-member store
# (its --etcd-protocol; default: the apiserver's default).
# --quick: N = 200,1000, 20 s window, 5 s settle, grace 20s, period 2s.
# --pods-timeout: default 120 s + 1 s per 20 pods.
# Defaults: the 3-member store (heartbeat 100 ms, election 1000 ms, fsync
# on: the store's defaults), grace 40s / period 5s (the controller manager's
# defaults, Kubernetes' before 1.32). Fleet workers (the pods' pool) and
# connections "auto": N/40, at least 32, at most 192; the fleet sizes its
# heartbeat pool itself (--heartbeat-workers 0: N/40 at a 10 s interval,
# 2..256), apart from the pods'. The fleet's lease PUTs are blocking calls,
# so it renews at most workers / PUT latency per second (Little's law): with
# 32 workers and 130 ms PUTs on a loaded machine that is ~250/s, half of what
# 5,000 nodes need. Real kubelets each have their own connection; the auto
# value keeps the simulator from being the limit while staying under the
# API server's 200 mutating requests in flight.
# Writes DIR/results.tsv (one line per N), DIR/table.md (printed at the
# end) and every process's log under DIR/n<N>/; data dirs are removed.
# Everything it starts is stopped on exit. Binaries: build/kplane and
# build/cmd/kpctl/kpctl, or $KPLANE and $KPCTL.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
source scripts/bench/lib.sh

node_list=""
backend=cluster
window=""
settle=""
workers=auto
api_conns=auto
renew=10s
grace=""
period=""
all=0
quick=0
out=""
cluster_cidr=""
node_mask=24
max_rss_mb=$(awk '/MemTotal/ {printf "%d", $2 / 2048}' /proc/meminfo)
pods=0
per_deploy=1000
pods_timeout=""
extra=()
api_flags=()
store_flags=()
cm_flags=()
at_window_end=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --nodes) node_list=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --all) all=1; shift ;;
    --backend) backend=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --api-connections) api_conns=$2; shift 2 ;;
    --lease-renew-interval) renew=$2; shift 2 ;;
    --grace) grace=$2; shift 2 ;;
    --monitor-period) period=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cluster-cidr) cluster_cidr=$2; shift 2 ;;
    --node-cidr-mask-size) node_mask=$2; shift 2 ;;
    --max-rss-mb) max_rss_mb=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --pods-per-deployment) per_deploy=$2; shift 2 ;;
    --pods-timeout) pods_timeout=$2; shift 2 ;;
    --apiserver-flag) api_flags+=("$2"); shift 2 ;;
    --store-flag) store_flags+=("$2"); shift 2 ;;
    --controller-manager-flag) cm_flags+=("$2"); shift 2 ;;
    --controller-manager-flag=*) cm_flags+=("${1#*=}"); shift ;;
    --at-window-end) at_window_end=$2; shift 2 ;;
    --etcd-protocol) api_flags+=("--etcd-protocol=$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [[ $quick == 1 ]]; then
  : "${node_list:=200,1000}" "${window:=20}" "${settle:=5}" "${grace:=20s}" "${period:=2s}"
else
  : "${node_list:=1000,5000,10000}" "${window:=60}" "${settle:=20}" "${grace:=40s}" "${period:=5s}"
fi
[[ $backend == cluster || $backend == embedded ]] || {
  echo "--backend: cluster or embedded" >&2; exit 2; }
[[ $pods =~ ^(0|[1-9][0-9]*)$ ]] || { echo "--pods: a number of pods (0: none), not '$pods'" >&2; exit 2; }
[[ $per_deploy =~ ^[1-9][0-9]*$ ]] || {
  echo "--pods-per-deployment: a number of pods, at least 1, not '$per_deploy'" >&2; exit 2; }
: "${pods_timeout:=$((120 + pods / 20))}"
[[ $pods_timeout =~ ^[1-9][0-9]*$ ]] || {
  echo "--pods-timeout: seconds, at least 1, not '$pods_timeout'" >&2; exit 2; }

need_binaries
bin=$KPLANE
kpctl=$KPCTL
probe=$root/scripts/bench/fleet_probe.py
: "${out:=/tmp/kplane-fleet-bench-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
tsv=$out/results.tsv

# Parenthesised: a bare ">" would be awk's print redirection. OFMT: awk's
# default %.6g printed an epoch deadline as 1.79599e+09, up to 10^4 s early.
calc() { awk "BEGIN { OFMT = \"%.10g\"; print ($*) }"; }
secs() {  # Go-style duration (10s, 500ms, 2m) -> seconds
  case $1 in
    *ms) calc "${1%ms} / 1000" ;;
    *s) echo "${1%s}" ;;
    *m) calc "${1%m} * 60" ;;
    *) echo "$1" ;;
  esac
}
now() { date +%s.%N; }

# --- processes of the current N; stop_all is the EXIT trap -----------------
pids=()      # our children: apiserver, controller manager, fleet, probe
store_dir=""
stop_all() {
  local i
  # The fleet first (it would log errors against a dying apiserver).
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[$i]}" 15; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  if [[ -n $store_dir ]]; then
    local members
    members=$(cat "$store_dir"/n*.pid 2>/dev/null || true)
    scripts/store-cluster.sh stop --dir "$store_dir" >/dev/null || true
    for p in $members; do
      for _ in $(seq 1 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$p" 2>/dev/null || true
    done
    rm -rf "$store_dir"/n[0-9]
    store_dir=""
  fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# --- the watchdog: every wait below polls check_alive ----------------------
watched=()  # "name pid log" of every process of the current N
watch() { watched+=("$1 $2 $3"); }
alive() {  # a zombie (exited, not yet reaped) counts as dead
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $st && $st != Z ]]
}
check_alive() {  # exits 3 if a watched process died or RSS passed the cap
  local w name pid log r total=0
  for w in "${watched[@]}"; do
    read -r name pid log <<<"$w"
    if ! alive "$pid"; then
      echo "FAILED: $name (pid $pid) exited; last lines of $log:" >&2
      tail -n 20 "$log" >&2 || true
      exit 3
    fi
    r=$(rss_mb "$pid")
    total=$((total + ${r:-0}))
  done
  if ((total > max_rss_mb)); then
    echo "FAILED: RSS of the processes ${total} MB > --max-rss-mb $max_rss_mb:" >&2
    for w in "${watched[@]}"; do
      read -r name pid log <<<"$w"
      echo "  $name $(rss_mb "$pid") MB" >&2
    done
    exit 3
  fi
}
nap() {  # nap SECONDS: sleep, checking the processes every second
  local deadline left
  deadline=$(calc "$(now) + $1")
  while :; do
    check_alive
    left=$(calc "$deadline - $(now)")
    [[ $(calc "$left > 0") == 1 ]] || break
    sleep "$(calc "$left < 1 ? $left : 1")"
  done
}

wait_http() {  # wait_http URL SECONDS
  local deadline
  deadline=$(calc "$(now) + $2")
  until curl -sf "$1" >/dev/null 2>&1; do
    [[ $(calc "$(now) > $deadline") == 1 ]] && return 1
    check_alive
    sleep 0.2
  done
}
sim_metric() {  # sim_metric PORT NAME_REGEX -> value (0 if absent)
  { curl -s "http://127.0.0.1:$1/metrics" || true; } |
    awk -v re="$2" '$1 ~ re && !f {print $2; f=1} END {if (!f) print 0}'
}
sim_metric_sum() {  # sim_metric_sum PORT NAME_REGEX -> sum of the matches
  { curl -s "http://127.0.0.1:$1/metrics" || true; } |
    awk -v re="$2" '$1 ~ re {s += $2} END {printf "%d\n", s}'
}
# The fleet's kubelet events (its event broadcaster): written (created +
# patched) and dropped because the recorder's queue was full.
sim_events() {
  sim_metric_sum "$1" '^events_recorded_total\{result="(created|patched)"\}$'
}
sim_events_dropped() {
  sim_metric_sum "$1" '^events_recorded_total\{result="dropped_queue_full"\}$'
}
lag_buckets() {
  { curl -s "http://127.0.0.1:$1/metrics" || true; } |
    grep '^kubeletsim_heartbeat_lag_seconds_bucket' |
    sed 's/.*le="\([^"]*\)"} \(.*\)/\1 \2/'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)
if [[ $(calc "$window < 2 * $(secs "$renew")") == 1 ]]; then
  echo "warning: a ${window}s window sees at most one renewal per node" \
    "(--lease-renew-interval $renew); lag and writes/s need 2 intervals or more" >&2
fi

header="date_utc	nodes	backend	workers	api_conns	renew_s	grace_s	period_s"
header+="	load_start	registered_s	api_ready	lag_p50_le	lag_p99_le"
header+="	last_lag_p50	last_lag_p99	last_lag_max	on_time	lease_wps	lease_due_wps"
header+="	lease_errors	false_notready	false_notready_events	detect_from_stop_s	detect_from_renew_s	bound_s"
header+="	detect_ok	leader	cpu_store1	rss_store1	cpu_store2	rss_store2"
header+="	cpu_store3	rss_store3	cpu_api	rss_api	cpu_cm	rss_cm	cpu_sim	rss_sim"
header+="	load_end	pass	note	pods	pods_running_s	pods_per_s	pod_events	pod_events_dropped"
header+="	pod_events_window"
[[ -f $tsv ]] || echo "$header" >"$tsv"

run_one() {
  local n=$1 dir=$out/n$1
  local workers=$workers api_conns=$api_conns auto=$((n / 40))
  ((auto < 32)) && auto=32
  ((auto > 192)) && auto=192
  [[ $workers == auto ]] && workers=$auto
  [[ $api_conns == auto ]] && api_conns=$auto
  rm -rf "$dir"
  mkdir -p "$dir"
  local base=$((20000 + RANDOM % 8000))
  local api_port=$((base + 40)) sim_port=$((base + 41)) cm_port=$((base + 42))
  local api=http://127.0.0.1:$api_port sim=http://127.0.0.1:$sim_port
  local cidr=$cluster_cidr
  if [[ -z $cidr ]]; then
    local bits=8
    while (((1 << bits) < n)); do bits=$((bits + 1)); done
    ((bits > 16)) && { echo "N=$n: more than 65,536 nodes need --cluster-cidr and --node-cidr-mask-size" >&2; return 2; }
    cidr=10.0.0.0/$((node_mask - bits))
  fi
  watched=()
  local load_start note="" store_pids=() endpoints=""
  load_start=$(load1)
  echo "== N=$n ($backend store, cluster CIDR $cidr, load $load_start, logs in $dir)" >&2

  if [[ $backend == cluster ]]; then
    store_dir=$dir/store
    KPLANE=$bin scripts/store-cluster.sh start --dir "$store_dir" --base-port "$base" \
      -- --log-level warning "${store_flags[@]}" >"$dir/store.out"
    endpoints=$(grep -o 'http://127.0.0.1:[0-9]*' "$dir/store.out" | paste -sd, -)
    mapfile -t store_pids < <(cat "$store_dir"/n1.pid "$store_dir"/n2.pid "$store_dir"/n3.pid)
    local i
    for i in 1 2 3; do watch "store-member-$i" "${store_pids[$((i - 1))]}" "$store_dir/n$i.log"; done
    "$bin" apiserver --insecure-http --storage-backend=remote --etcd-servers="$endpoints" \
      --port "$api_port" --log-level warning --authorization-mode=AlwaysAllow \
      "${api_flags[@]}" >"$dir/apiserver.log" 2>&1 &
  else
    "$bin" apiserver --insecure-http --data-dir "$dir/apiserver-data" --port "$api_port" \
      --log-level warning --authorization-mode=AlwaysAllow "${api_flags[@]}" \
      >"$dir/apiserver.log" 2>&1 &
  fi
  local api_pid=$!
  pids+=("$api_pid")
  watch apiserver "$api_pid" "$dir/apiserver.log"
  wait_http "$api/readyz" 60 || { echo "apiserver not ready; see $dir/apiserver.log" >&2; return 2; }

  "$bin" controller-manager --master "$api" --port "$cm_port" \
    --node-monitor-grace-period "$grace" --node-monitor-period "$period" \
    --allocate-node-cidrs --cluster-cidr "$cidr" --node-cidr-mask-size "$node_mask" \
    "${cm_flags[@]}" >"$dir/controller-manager.log" 2>&1 &
  local cm_pid=$!
  pids+=("$cm_pid")
  watch controller-manager "$cm_pid" "$dir/controller-manager.log"
  wait_http "http://127.0.0.1:$cm_port/healthz" 60 ||
    { echo "controller manager not healthy; see $dir/controller-manager.log" >&2; return 2; }

  local t_start
  t_start=$(now)
  "$bin" kubeletsim --server "$api" --nodes "$n" --port "$sim_port" \
    --lease-renew-interval "$renew" --workers "$workers" \
    --api-connections "$api_conns" --log-level warning "${extra[@]}" \
    >"$dir/kubeletsim.log" 2>&1 &
  local sim_pid=$!
  pids+=("$sim_pid")
  watch kubeletsim "$sim_pid" "$dir/kubeletsim.log"

  # 1. Registration: the fleet's count, then the API server's view.
  local reg_timeout=$((120 + n / 20)) ready=0 registered_s api_ready
  local deadline
  deadline=$(calc "$t_start + $reg_timeout")
  while [[ $(calc "$(now) < $deadline") == 1 ]]; do
    ready=$(sim_metric "$sim_port" '^kubeletsim_nodes\{state="ready"\}$')
    [[ ${ready%.*} -ge $n ]] && break
    check_alive
    sleep 0.5
  done
  registered_s=$(calc "int($(now) - $t_start + 0.5)")
  if [[ ${ready%.*} -lt $n ]]; then
    note="only ${ready%.*} of $n registered in ${reg_timeout}s"
  fi
  local probe_out
  probe_out=$(python3 "$probe" nodes "$api" || echo "total=0 ready=0 notready=0")
  api_ready=$(sed 's/.* ready=\([0-9]*\).*/\1/' <<<"$probe_out")
  echo "   registered in ${registered_s}s; API server: $probe_out" >&2

  # 1b. --pods: Deployments, then P pods Running through the API.
  local pods_s=- pods_ps=- pod_events=- pod_dropped=- pod_events_window=-
  local ev0 dr0
  if ((pods > 0)); then
    local t_pods deployed started=0 running=0 fleet_s=-
    ev0=$(sim_events "$sim_port")
    dr0=$(sim_events_dropped "$sim_port")
    t_pods=$(now)
    deployed=$(python3 "$probe" deploy "$api" default "$pods" "$per_deploy" 2>"$dir/deploy.err") || {
      echo "creating the Deployments failed: $(cat "$dir/deploy.err")" >&2; return 2; }
    deadline=$(calc "$t_pods + $pods_timeout")
    while [[ $(calc "$(now) < $deadline") == 1 ]]; do
      check_alive
      # The fleet's count is a cheap /metrics read; the API server's LIST
      # of P pods is not, so it is asked only once the fleet has them.
      started=$(sim_metric_sum "$sim_port" '^kubeletsim_pods\{stage="(Started|Ready)"\}$')
      if ((started >= pods)); then
        [[ $fleet_s == - ]] && fleet_s=$(calc "int(10 * ($(now) - $t_pods) + 0.5) / 10")
        running=$(python3 "$probe" running "$api" default | sed 's/running=//') || running=0
        ((running >= pods)) && break
      fi
      sleep 1
    done
    if ((running >= pods)); then
      local took
      took=$(calc "$(now) - $t_pods")
      pods_s=$(calc "int(10 * $took + 0.5) / 10")
      pods_ps=$(calc "int(10 * $pods / $took + 0.5) / 10")
    else
      note="${note:+$note; }only $running of $pods pods Running in ${pods_timeout}s"
    fi
    local after="after ${pods_s}s"
    [[ $pods_s == - ]] && after="at the ${pods_timeout}s timeout"
    echo "   pods: $deployed; $running Running (API) $after" \
      "(the fleet counted $pods started after ${fleet_s}s), $pods_ps pods/s;" \
      "kubelet events so far: written $(($(sim_events "$sim_port") - ev0))," \
      "dropped $(($(sim_events_dropped "$sim_port") - dr0))" >&2
  fi

  nap "$settle"

  # 2. The window.
  local all_pids=("${store_pids[@]}" "$api_pid" "$cm_pid" "$sim_pid")
  declare -A t0
  local p
  for p in "${all_pids[@]}"; do t0[$p]=$(cpu_ticks "$p"); done
  local b0 b1 w0 w1 e0 e1
  local evw0
  evw0=$(sim_events "$sim_port")
  b0=$(lag_buckets "$sim_port")
  w0=$(sim_metric "$sim_port" '^kubeletsim_api_writes_total\{operation="lease"\}$')
  e0=$(sim_metric "$sim_port" '^kubeletsim_api_errors_total\{operation="lease"\}$')
  nap "$window"
  b1=$(lag_buckets "$sim_port")
  w1=$(sim_metric "$sim_port" '^kubeletsim_api_writes_total\{operation="lease"\}$')
  e1=$(sim_metric "$sim_port" '^kubeletsim_api_errors_total\{operation="lease"\}$')
  declare -A cpu rss
  for p in "${all_pids[@]}"; do
    cpu[$p]=$(calc "int(100 * ($(cpu_ticks "$p") - ${t0[$p]}) / $hz / $window + 0.5)")
    rss[$p]=$(rss_mb "$p")
  done
  if [[ -n $at_window_end ]]; then
    FLEET_DIR=$dir API_URL=$api SIM_URL=$sim API_PID=$api_pid CM_PID=$cm_pid \
      SIM_PID=$sim_pid STORE_PIDS="${store_pids[*]}" STORE_EPS="$endpoints" \
      bash -c "$at_window_end" >"$dir/at-window-end.out" 2>&1 ||
      echo "   --at-window-end failed; see $dir/at-window-end.out" >&2
  fi
  if ((pods > 0)); then
    # Written from the Deployments' creation to the window's end: the
    # recorder's queue may still drain after the pods are Running.
    local evw1
    evw1=$(sim_events "$sim_port")
    pod_events=$((evw1 - ev0))
    pod_dropped=$(($(sim_events_dropped "$sim_port") - dr0))
    pod_events_window=$((evw1 - evw0))
  fi
  local p50 p99
  read -r p50 p99 < <(paste <(echo "$b0") <(echo "$b1") | awk '
    { le[NR] = $1; d[NR] = $4 - $2 }
    END {
      total = d[NR]
      for (q = 1; q <= 2; q++) {
        want = (q == 1 ? 0.5 : 0.99) * total; ans = "n/a"
        for (i = 1; i <= NR; i++) if (d[i] >= want && total > 0) { ans = le[i]; break }
        printf "%s%s", (q == 1 ? "" : " "), ans
      }
      print ""
    }')
  local snap snap_p50 snap_p99 snap_max
  snap=$(python3 "$probe" lagsnap "$sim" || echo "n=0 p50=nan p99=nan max=nan")
  snap_p50=$(sed 's/.*p50=\([^ ]*\).*/\1/' <<<"$snap")
  snap_p99=$(sed 's/.*p99=\([^ ]*\).*/\1/' <<<"$snap")
  snap_max=$(sed 's/.*max=\([^ ]*\).*/\1/' <<<"$snap")
  local lease_wps due_wps errors on_time false_notready
  lease_wps=$(calc "int(10 * ($w1 - $w0) / $window + 0.5) / 10")
  # The fleet renews every interval plus 0-4 % jitter (2 % on average).
  due_wps=$(calc "int(10 * $n / ($(secs "$renew") * 1.02) + 0.5) / 10")
  errors=$(calc "$e1 - $e0")
  on_time=no
  [[ $p99 != n/a && $p99 != +Inf && $(calc "$p99 <= 1") == 1 ]] && on_time=yes
  probe_out=$(python3 "$probe" nodes "$api" || echo "total=0 ready=0 notready=0")
  false_notready=$(sed 's/.* notready=\([0-9]*\).*/\1/' <<<"$probe_out")
  local leader=-
  if [[ -n $endpoints ]]; then
    IFS=, read -ra EPS <<<"$endpoints"
    find_leader && leader=$((LEADER + 1))
  fi
  echo "   window ${window}s: lag p50<=$p50 p99<=$p99 (last-lag snapshot $snap)," \
    "lease writes/s $lease_wps of $due_wps due, errors $errors, not Ready $false_notready" >&2
  ((pods > 0)) && echo "   kubelet events since the Deployments: written $pod_events," \
    "dropped $pod_dropped; in the window $pod_events_window" >&2

  # 3. Stop one node; time until the node lifecycle controller's NotReady
  #    reaches a watcher of the API server.
  # Every NotReady the controller logged so far hit a node whose kubelet
  # was running (also during registration, which the window misses).
  local flaps
  flaps=$(grep -c "stopped renewing its lease" "$dir/controller-manager.log" || true)
  local victim=node-$((n / 2)) bound det_stop=- det_renew=- detect_ok=no
  bound=$(calc "$(secs "$grace") + $(secs "$period")")
  rm -f "$dir/watching"
  python3 "$probe" detect "$api" "$victim" "$dir/watching" "$(calc "$bound + 60")" \
    >"$dir/detect.out" 2>"$dir/detect.err" &
  local probe_pid=$!
  pids+=("$probe_pid")
  for _ in $(seq 1 100); do [[ -f $dir/watching ]] && break; sleep 0.1; done
  local t_stop
  t_stop=$(now)
  "$kpctl" sim --endpoint "$sim" stop-node "$victim" >/dev/null
  while alive "$probe_pid"; do check_alive; sleep 0.5; done
  wait "$probe_pid" || true
  local det notready_at last_renew
  det=$(cat "$dir/detect.out")
  notready_at=$(sed -n 's/.*notready_at=\([^ ]*\).*/\1/p' <<<"$det")
  last_renew=$(sed -n 's/.*last_renew=\([^ ]*\).*/\1/p' <<<"$det")
  if [[ -n $notready_at && $notready_at != none ]]; then
    det_stop=$(calc "int(10 * ($notready_at - $t_stop) + 0.5) / 10")
    if [[ -n $last_renew && $last_renew != none ]]; then
      det_renew=$(calc "int(10 * ($notready_at - $last_renew) + 0.5) / 10")
      # Grace runs from the last renewal, so that is what the bound limits
      # (the stop itself comes up to one renew interval later).
      [[ $(calc "$notready_at - $last_renew <= $bound") == 1 ]] && detect_ok=yes
    fi
  fi
  echo "   stopped $victim: $det; NotReady after ${det_stop}s from the stop," \
    "${det_renew}s from its last renewal (bound grace + period = ${bound}s)" >&2

  local pass=no
  [[ -z $note && $on_time == yes && $detect_ok == yes && $false_notready == 0 &&
     ${flaps:-0} == 0 && ${api_ready:-0} -ge $n ]] && pass=yes
  local cols=()
  for p in "${store_pids[@]}"; do cols+=("${cpu[$p]}" "${rss[$p]}"); done
  while [[ ${#cols[@]} -lt 6 ]]; do cols+=(- -); done
  local row
  row="$(date -u +%FT%TZ)	$n	$backend	$workers	$api_conns	$(secs "$renew")"
  row+="	$(secs "$grace")	$(secs "$period")	$load_start	$registered_s	$api_ready"
  row+="	$p50	$p99	$snap_p50	$snap_p99	$snap_max	$on_time	$lease_wps	$due_wps"
  row+="	$errors	$false_notready	$flaps	$det_stop	$det_renew	$bound	$detect_ok	$leader"
  row+="	$(IFS=$'\t'; echo "${cols[*]}")"
  row+="	${cpu[$api_pid]}	${rss[$api_pid]}	${cpu[$cm_pid]}	${rss[$cm_pid]}"
  row+="	${cpu[$sim_pid]}	${rss[$sim_pid]}	$(load1)	$pass	${note:--}"
  row+="	$pods	$pods_s	$pods_ps	$pod_events	$pod_dropped	$pod_events_window"
  echo "$row" >>"$tsv"
  watched=()
  stop_all
  rm -rf "$dir/apiserver-data"
  [[ $pass == yes ]]
}

echo "fleet bench: N=$node_list backend=$backend window=${window}s settle=${settle}s" \
  "renew=$renew grace=$grace period=$period workers=$workers pods=$pods; results in $out" >&2
IFS=, read -r -a ns <<<"$node_list"
for n in "${ns[@]}"; do
  if run_one "$n"; then
    :
  else
    rc=$?
    [[ $rc == 2 ]] && exit 1
    if [[ $all == 0 ]]; then
      echo "N=$n failed; stopping (--all runs every N)" >&2
      break
    fi
  fi
done
python3 "$probe" table "$tsv" | tee "$out/table.md"
