#!/usr/bin/env bash
# The API server against its own store (issue 9, "API server"): starts a
# 3-member `kplane store` (scripts/store-cluster.sh) and one `kplane
# apiserver --storage-backend=remote` over it, then measures with the shared
# load tool (`kpctl bench api`, `kpctl store bench`):
#   put     the raw store put rate at 1, 16, 64 clients, values the size of
#           a pod's stored bytes, to the member the apiserver talks to;
#   crud    pods create / get / update (conflict-free) / list (a 100-pod
#           namespace, as `kubectl get pods` asks: limit=500) / delete at
#           1, 16, 64 clients: ops/s and p99, create's ratio to the put rate,
#           apiserver + store CPU per create and per list;
#   list    LIST of 10,000 and 100,000 pods from the watch cache
#           (resourceVersion=0), from the store in one read
#           (resourceVersionMatch=Exact), from the store page by page
#           (limit=500) and the raw store range of the same prefix: time and
#           the apiserver's peak RSS; the fill time of the pods;
#   watch   watch fan-out with 1,000 and 10,000 watchers, paced creates:
#           delivery p99 (create sent -> ADDED event read by the watcher);
# and checks the Kubernetes SLOs (mutating and single-object p99 <= 1 s,
# LIST p99 <= 5 s), printing met/missed.
#
#   scripts/bench/apiserver.sh [--quick] [--runs N]
#                              [--rows put,crud,list,watch] [--out DIR]
#                              [--base-port P] [--tls]
#                              [--etcd-protocol json|grpc]
#
# --etcd-protocol: the apiserver's store client (its --etcd-protocol;
# default: the apiserver's default).
# --tls: everything as `kplane up` runs it: the store with etcd's TLS flags
# (client certificates required on client and peer ports), the apiserver
# serving HTTPS (--tls-cert-file, --client-ca-file) and dialing the store
# with --etcd-cafile/--etcd-certfile/--etcd-keyfile, the load tool presenting
# a client certificate to both (one openssl-made CA, scripts/bench/lib.sh
# make_bench_pki). Rows put and crud only; compare with a run without it.
#
# A full run (3 repetitions) takes about 10 minutes; --quick (1 run, 1 s
# runs, 1,000/5,000-pod lists, 100/1,000 watchers) about 2. Raw output goes
# to DIR/raw.log, figures to DIR/results.tsv (row, value, SLO or ratio
# annotation), the table to DIR/table.md (default DIR:
# /tmp/kplane-bench/api-<time>). Needs build/kplane and build/cmd/kpctl/kpctl
# (cmake --build build --target kplane kpctl). Ports: the store's members
# serve clients on P+10, P+20, P+30 (peers +1), the apiserver on P+130
# (default P=16370). Nothing else heavy should run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
source scripts/bench/lib.sh

quick=0
runs=3
rows="put,crud,list,watch"
out=/tmp/kplane-bench/api-$(date -u +%Y%m%d-%H%M%S)
base=16370
tls=0
api_extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1; runs=1; shift ;;
    --runs) runs=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --base-port) base=$2; shift 2 ;;
    --tls) tls=1; shift ;;
    --etcd-protocol) api_extra+=("--etcd-protocol=$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

need_binaries
if ((tls)); then
  for r in ${rows//,/ }; do
    [[ $r == put || $r == crud ]] || { echo "--tls: row $r does not run over TLS (put and crud do)" >&2; exit 2; }
  done
fi

clients=(1 16 64)
if ((quick)); then
  dur=1s; warm=500ms; fixture_pods=200; list_sizes=(1000 5000)
  watch_sets=("100 20 10" "1000 20 10")  # watchers creates rate
else
  dur=2s; warm=1s; fixture_pods=1000; list_sizes=(10000 100000)
  watch_sets=("1000 100 10" "10000 30 3")
fi
fill_clients=64

mkdir -p "$out"
raw=$out/raw.log
res=$out/results.tsv
: >"$res"
data=$(mktemp -d /tmp/kplane-apibench.XXXXXX)
say() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$raw" >&2; }
has_row() { [[ ",$rows," == *",$1,"* ]]; }
commas() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

# --- servers -----------------------------------------------------------------
cleanup() {
  stop_bench_servers
  rm -rf "$data"
}
trap cleanup EXIT

say "machine: $(nproc) cpus, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out"
scheme=http
store_tls=()   # store-cluster.sh's
STORE_BENCH_TLS=()  # kpctl store bench's
API_BENCH_TLS=()    # kpctl bench api's
API_TLS=(--insecure-http)  # the apiserver's
if ((tls)); then
  pki=$out/pki
  make_bench_pki "$pki"
  scheme=https
  store_tls=(--pki "$pki")
  STORE_BENCH_TLS=(--cacert "$pki/ca.crt" --cert "$pki/client.crt" --key "$pki/client.key")
  API_BENCH_TLS=(--certificate-authority "$pki/ca.crt" --client-certificate "$pki/client.crt" --client-key "$pki/client.key")
  API_TLS=(--tls-cert-file "$pki/member.crt" --tls-private-key-file "$pki/member.key"
    --client-ca-file "$pki/ca.crt" --etcd-cafile "$pki/ca.crt"
    --etcd-certfile "$pki/client.crt" --etcd-keyfile "$pki/client.key")
  say "TLS: certificates in $pki; client certificates on every connection"
fi
# A 3-member store, the apiserver's store client sent to the leader first
# (lib.sh).
start_bench_store "$data/store" "$base" ${store_tls[@]+"${store_tls[@]}"} >>"$raw" ||
  { say "the store elected no leader; logs in $data/store"; exit 1; }
store_pids_csv=$STORE_PIDS_CSV
leader_ep=$LEADER_EP
api_port=$((base + 130))
server=$scheme://127.0.0.1:$api_port
start_bench_apiserver "$data/api.log" "$api_port" "${API_TLS[@]}" \
  ${api_extra[@]+"${api_extra[@]}"} || { say "apiserver did not start"; exit 1; }
api_pid=$API_PID
all_pids="$api_pid,$store_pids_csv"
say "store leader $leader_ep (pids $store_pids_csv), apiserver $server (pid $api_pid)"

# --- results -------------------------------------------------------------------
# record ROW VALUE [ANNOTATION]: ANNOTATION is "slo:<ms>" (the value is a
# latency in ms that the SLO bounds) or "ratio:<row>" (report value/row).
record() { printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >>"$res"; }
run_tool() {  # run_tool <kpctl args...>: runs, logs, prints the last RESULT line
  echo "+ kpctl $*" >>"$raw"
  local outp
  outp=$("$KPCTL" "$@" 2>>"$raw") || { echo "$outp" >>"$raw"; say "failed: kpctl $*"; return 1; }
  echo "$outp" >>"$raw"
  grep '^RESULT' <<<"$outp" | tail -1
}
api() { run_tool bench api "$@" --server "$server" "${API_BENCH_TLS[@]}"; }
cpu_per_op_ms() {  # cpu_per_op_ms RESULT_LINE: server CPU ms per operation
  awk -v s="$(field server_cpu_s "$1")" -v o="$(field operations "$1")" \
    'BEGIN{ if (o > 0) printf "%.2f", s * 1000 / o; }'
}

# --- a pod's stored size -------------------------------------------------------
api create --namespace sizeprobe --clients 1 --total 1 >/dev/null
pod_bytes=$(curl -s "${CURL_TLS[@]}" -X POST -d "{\"key\":\"$(printf /registry/pods/sizeprobe/ | base64 -w0)\",\"range_end\":\"$(printf /registry/pods/sizeprobe0 | base64 -w0)\",\"limit\":1}" \
  "$leader_ep/v3/kv/range" |
  python3 -c 'import base64,json,sys; print(len(base64.b64decode(json.load(sys.stdin)["kvs"][0]["value"])))')
say "a pod as the apiserver stores it: $pod_bytes bytes"

# --- rows ----------------------------------------------------------------------
run_put() {
  local r c line
  for r in $(seq 1 "$runs"); do
    for c in "${clients[@]}"; do
      line=$(run_tool store bench put --endpoints "$leader_ep" --clients "$c" "${STORE_BENCH_TLS[@]}" \
        --duration "$dur" --warmup "$warm" --val-size "$pod_bytes" \
        --key-prefix /registry/putbench/ --threads 2 \
        --server-pids "$store_pids_csv") || continue
      record "store put c=$c ($pod_bytes-byte values): ops/s" "$(field ops_per_s "$line")"
      record "store put c=$c: p99 ms" "$(field p99_ms "$line")"
      record "store put c=$c: store CPU ms/put" "$(awk -v s="$(field server_cpu_s "$line")" -v o="$(field ops_per_s "$line")" -v d="$(field seconds "$line")" 'BEGIN{printf "%.2f", s*1000/(o*d)}')"
    done
  done
}

run_crud() {
  local r c line
  line=$(api get --namespace fixture --fill "$fixture_pods" --fill-clients "$fill_clients" \
    --pods "$fixture_pods" --clients 1 --total 1) || return 0
  api get --namespace list100 --fixture l --fill 100 --pods 100 --clients 1 --total 1 >/dev/null || return 0
  for r in $(seq 1 "$runs"); do
    for c in "${clients[@]}"; do
      line=$(api create --namespace bench --clients "$c" --duration "$dur" \
        --warmup "$warm" --threads 2 --server-pids "$all_pids") && {
        record "create c=$c: pods/s" "$(field ops_per_s "$line")" "ratio:store put c=$c ($pod_bytes-byte values): ops/s"
        record "create c=$c: p99 ms" "$(field p99_ms "$line")" slo:1000
        record "create c=$c: apiserver+store CPU ms/pod" "$(cpu_per_op_ms "$line")"
      }
      line=$(api get --namespace fixture --pods "$fixture_pods" --clients "$c" \
        --duration "$dur" --warmup "$warm" --threads 2) && {
        record "get c=$c: ops/s" "$(field ops_per_s "$line")"
        record "get c=$c: p99 ms" "$(field p99_ms "$line")" slo:1000
      }
      line=$(api update --namespace fixture --pods "$fixture_pods" --clients "$c" \
        --duration "$dur" --warmup "$warm" --threads 2) && {
        record "update c=$c: ops/s" "$(field ops_per_s "$line")" "ratio:store put c=$c ($pod_bytes-byte values): ops/s"
        record "update c=$c: p99 ms" "$(field p99_ms "$line")" slo:1000
        [[ $(field errors "$line") == 0 ]] || say "update c=$c: $(field errors "$line") errors"
      }
      line=$(api list --namespace list100 --list-query limit=500 --clients "$c" \
        --duration "$dur" --warmup "$warm" --threads 2 --server-pids "$all_pids") && {
        record "list 100 pods (limit=500) c=$c: ops/s" "$(field ops_per_s "$line")"
        record "list 100 pods (limit=500) c=$c: p99 ms" "$(field p99_ms "$line")" slo:5000
        record "list 100 pods (limit=500) c=$c: apiserver+store CPU ms/list" "$(cpu_per_op_ms "$line")"
      }
      # Deletes every pod the create run made.
      line=$(api delete --namespace bench --clients "$c" --threads 2) && {
        record "delete c=$c: ops/s" "$(field ops_per_s "$line")"
        record "delete c=$c: p99 ms" "$(field p99_ms "$line")" slo:1000
      }
    done
  done
}

run_list() {
  local n ns line r rv label
  for n in "${list_sizes[@]}"; do
    ns=list$n
    label=$(commas "$n")
    line=$(api get --namespace "$ns" --fixture p --fill "$n" --fill-clients "$fill_clients" \
      --pods 1 --clients 1 --total 1) || continue
    # The fill's RESULT line is the first one.
    line=$(grep 'workload=fill' "$raw" | tail -1)
    record "fill $label pods ($fill_clients clients): s" "$(field seconds "$line")"
    record "fill $label pods: pods/s" "$(awk -v n="$n" -v s="$(field seconds "$line")" 'BEGIN{printf "%.0f", n/s}')"
    record "apiserver RSS with $label pods (+ earlier rows) MiB" "$(awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$api_pid/status")"
    for r in $(seq 1 "$runs"); do
      line=$(api list --namespace "$ns" --list-query resourceVersion=0 --clients 1 \
        --total 1 --server-pids "$api_pid") && {
        record "LIST $label pods, watch cache (rv=0): ms" "$(field p99_ms "$line")" slo:5000
        record "LIST $label pods, watch cache: apiserver peak RSS MiB" "$(field server_peak_rss_mb "$line")"
        [[ $(field list_items "$line") == "$n" ]] || say "LIST $ns rv=0: $(field list_items "$line") items"
      }
      # The list's own resourceVersion (the first in the answer).
      rv=$(curl -s "$server/api/v1/namespaces/$ns/pods?limit=1" |
        grep -o '"resourceVersion":"[0-9]*"' | sed -n '1s/[^0-9]//gp')
      line=$(api list --namespace "$ns" \
        --list-query "resourceVersionMatch=Exact&resourceVersion=$rv" --clients 1 \
        --total 1 --server-pids "$api_pid") && {
        record "LIST $label pods, store in one read (Exact): ms" "$(field p99_ms "$line")" slo:5000
        record "LIST $label pods, store in one read: apiserver peak RSS MiB" "$(field server_peak_rss_mb "$line")"
        [[ $(field list_items "$line") == "$n" ]] || say "LIST $ns Exact: $(field list_items "$line") items"
      }
      line=$(api list --namespace "$ns" --list-query limit=500 --clients 1 \
        --total 1 --server-pids "$api_pid") && {
        record "LIST $label pods, store paged (limit=500): ms" "$(field p99_ms "$line")" slo:5000
        record "LIST $label pods, store paged: apiserver peak RSS MiB" "$(field server_peak_rss_mb "$line")"
      }
      line=$(run_tool store bench range --endpoints "$leader_ep" --range-prefix \
        --key-prefix "/registry/pods/$ns/" --clients 1 --total 1) && {
        record "raw store range of the same $label keys: ms" "$(field p99_ms "$line")"
      }
    done
  done
}

run_watch() {
  local set w n rate r line label
  for set in "${watch_sets[@]}"; do
    read -r w n rate <<<"$set"
    label="watch $(commas "$w") watchers, $n creates at $rate/s"
    for r in $(seq 1 "$runs"); do
      line=$(api watch --namespace watch --watchers "$w" --creates "$n" \
        --create-rate "$rate" --server-pids "$api_pid") || continue
      record "$label: delivery p50 ms" "$(field send_p50_ms "$line")"
      record "$label: delivery p99 ms" "$(field send_p99_ms "$line")"
      record "$label: create p99 ms" "$(field create_p99_ms "$line")" slo:1000
      record "$label: apiserver CPU s" "$(field server_cpu_s "$line")"
      [[ $(field delivered "$line") == "$(field expected "$line")" ]] ||
        say "$label: delivered $(field delivered "$line") of $(field expected "$line")"
    done
  done
}

if has_row put; then say "put (raw store)"; run_put; fi
if has_row crud; then say "crud"; run_crud; fi
if has_row list; then say "list"; run_list; fi
if has_row watch; then say "watch"; run_watch; fi
say "done; load average $(cut -d' ' -f1-3 /proc/loadavg)"

python3 "$top/scripts/bench/summarize_api.py" "$res" | tee "$out/table.md"
