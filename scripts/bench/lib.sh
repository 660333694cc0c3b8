# shellcheck shell=bash
# Shared by the benchmark scripts (store.sh, put-leader.sh, apiserver.sh,
# apiserver_profile.sh): finding a store's leader, starting and stopping a
# 3-member store with an apiserver over it, waiting for processes, reading
# RESULT lines. Source it; it defines functions and the LEADER variable,
# nothing runs.
#
#   EPS=(http://127.0.0.1:12380 http://127.0.0.1:12390 http://127.0.0.1:12400)
#   wait_leader || exit 1
#   echo "${EPS[$LEADER]}"

# need_binaries [MORE...]: sets KPLANE and KPCTL (the build/ binaries unless
# the environment names others) and exits if they or MORE are missing.
need_binaries() {
  KPLANE=${KPLANE:-$PWD/build/kplane}
  KPCTL=${KPCTL:-$PWD/build/cmd/kpctl/kpctl}
  local b
  for b in "$KPLANE" "$KPCTL" "$@"; do
    [[ -x $b ]] || { echo "missing $b (cmake --build build --target kplane kpctl)" >&2; exit 1; }
  done
}

# TLS (the --tls option of store.sh and apiserver.sh): make_bench_pki DIR
# writes, with openssl, a CA (DIR/ca.crt) and, signed by it, DIR/member.crt
# and .key (127.0.0.1 and localhost; server and client use, so the same pair
# serves a member's client and peer ports and the apiserver's port) and
# DIR/client.crt and .key (CN root: what the load tool, curl and the
# apiserver's store client present). EC P-256 as kplane up's PKI. It sets
# CURL_TLS, the options curl needs to reach the members.
CURL_TLS=()
make_bench_pki() {
  local d=$1 name subj ext
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -days 2 -subj /CN=bench-ca -keyout "$d/ca.key" -out "$d/ca.crt" \
    2>/dev/null
  for name in member client; do
    if [[ $name == member ]]; then
      subj=/CN=member
      ext="subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
    else
      subj=/CN=root
      ext="extendedKeyUsage=clientAuth"
    fi
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -subj "$subj" -keyout "$d/$name.key" -out "$d/$name.csr" 2>/dev/null
    openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
      -CAcreateserial -days 2 -out "$d/$name.crt" \
      -extfile <(printf '%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n' "$ext") \
      2>/dev/null
  done
  CURL_TLS=(--cacert "$d/ca.crt" --cert "$d/client.crt" --key "$d/client.key")
}

# member_tls_flags DIR: etcd's TLS flags (kplane store takes the same) for a
# member with the pair above, client certificates required on both ports.
member_tls_flags() {
  local d=$1
  echo --cert-file "$d/member.crt" --key-file "$d/member.key" \
    --trusted-ca-file "$d/ca.crt" --client-cert-auth \
    --peer-cert-file "$d/member.crt" --peer-key-file "$d/member.key" \
    --peer-trusted-ca-file "$d/ca.crt" --peer-client-cert-auth
}

# find_leader: sets LEADER to the index (0-based) in EPS of the member that
# reports itself as leader in /v3/maintenance/status (kplane store and etcd
# answer alike), or -1 and returns 1 when none does right now.
# shellcheck disable=SC2034  # read by the scripts that source this file
LEADER=-1
find_leader() {
  LEADER=-1
  local i body mid lid
  for i in "${!EPS[@]}"; do
    body=$(curl -s -m 1 "${CURL_TLS[@]}" -X POST -d '{}' "${EPS[$i]}/v3/maintenance/status" || true)
    mid=$(sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p' <<<"$body")
    lid=$(sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' <<<"$body")
    if [[ -n $mid && $mid == "$lid" ]]; then LEADER=$i; return 0; fi
  done
  return 1
}

# wait_leader: find_leader, retried for up to 15 s.
wait_leader() {
  local _
  for _ in $(seq 1 150); do
    find_leader && return 0
    sleep 0.1
  done
  return 1
}

# wait_gone PID...: returns once none of the processes exists. Members are
# started disowned (no "Killed" note from the shell for the ones a row kills),
# so `wait` cannot be used; poll.
wait_gone() {
  local p
  for p in "$@"; do
    while [[ -n $p ]] && kill -0 "$p" 2>/dev/null; do sleep 0.05; done
  done
}

# stop_pid PID [GRACE]: SIGTERM, then SIGKILL if it is still there after
# GRACE seconds (default 10); returns once it is gone (a server hung in its
# shutdown must not hang the benchmark).
stop_pid() {
  local p=$1 grace=${2:-10} _
  [[ -n $p ]] || return 0
  kill "$p" 2>/dev/null || return 0
  for _ in $(seq 1 $((grace * 20))); do
    kill -0 "$p" 2>/dev/null || return 0
    sleep 0.05
  done
  echo "pid $p did not stop within $grace s of SIGTERM: SIGKILL" >&2
  kill -9 "$p" 2>/dev/null || true
  wait_gone "$p"
}

# start_bench_store DIR BASE [STORE-CLUSTER-OPTIONS...]: starts a 3-member
# `kplane store` in DIR (scripts/store-cluster.sh; members serve clients on
# BASE+10, +20, +30, peers on +1) with store.sh's settings (heartbeat
# 100 ms, election 1000 ms, fsync on) and waits for a leader. The options
# go to store-cluster.sh (--pki PKI: https everywhere). Sets STORE_PIDS,
# STORE_PIDS_CSV, EPS, LEADER, LEADER_EP and ETCD_SERVERS: the endpoints
# with the leader first, since the apiserver's store client sends
# everything to its first endpoint while it answers, so neither the
# apiserver nor a put baseline pays a follower's forwarding. Its output
# goes to stdout; returns 1 when no leader was elected.
BENCH_STORE_DIR=""
STORE_PIDS=()
start_bench_store() {
  local dir=$1 base=$2 scheme=http i
  shift 2
  [[ " $* " == *" --pki "* || " $* " == *" --pki="* ]] && scheme=https
  BENCH_STORE_DIR=$dir
  # Callers run this as `start_bench_store ... || ...`, where set -e is off:
  # each step's failure is returned by hand.
  scripts/store-cluster.sh start --dir "$dir" --base-port "$base" "$@" -- \
    --heartbeat-interval 100 --election-timeout 1000 --snapshot-count 100000 \
    --log-level warning || return 1
  STORE_PIDS=()
  EPS=()
  for i in 1 2 3; do
    STORE_PIDS+=("$(cat "$dir/n$i.pid")") || return 1
    EPS+=("$scheme://127.0.0.1:$((base + i * 10))")
  done
  STORE_PIDS_CSV=$(IFS=,; echo "${STORE_PIDS[*]}")
  wait_leader || return 1
  LEADER_EP=${EPS[$LEADER]}
  ETCD_SERVERS=$LEADER_EP
  for i in "${!EPS[@]}"; do [[ $i == "$LEADER" ]] || ETCD_SERVERS+=",${EPS[$i]}"; done
}

# start_bench_apiserver LOG PORT [APISERVER-FLAGS...]: starts `kplane
# apiserver --storage-backend=remote` over ETCD_SERVERS (start_bench_store)
# on PORT (--max-watches 20000, --log-level warning,
# --authorization-mode=AlwaysAllow, then FLAGS: --insecure-http or TLS
# flags), its output in LOG, and waits (30 s at most) until it serves. Sets
# API_PID; returns 1, LOG on stderr, when it exited or did not start.
API_PID=""
start_bench_apiserver() {
  local log=$1 port=$2 _
  shift 2
  "$KPLANE" apiserver --storage-backend=remote --etcd-servers="$ETCD_SERVERS" \
    --port "$port" --max-watches 20000 --log-level warning \
    --authorization-mode=AlwaysAllow "$@" >"$log" 2>&1 &
  API_PID=$!
  for _ in $(seq 1 300); do
    grep -q "serving on" "$log" && return 0
    kill -0 "$API_PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log" >&2
  return 1
}

# stop_bench_servers: stops the apiserver (API_PID) and the store
# start_bench_store started, and returns once they are gone. Safe to call
# when either was not started, and twice.
stop_bench_servers() {
  if [[ -n $API_PID ]]; then
    stop_pid "$API_PID"
    API_PID=""
  fi
  if [[ -n $BENCH_STORE_DIR ]]; then
    scripts/store-cluster.sh stop --dir "$BENCH_STORE_DIR" >/dev/null 2>&1 || true
    wait_gone "${STORE_PIDS[@]:-}"
    BENCH_STORE_DIR=""
  fi
}

# field KEY LINE: the value of KEY=... in a RESULT line of the load tool.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# load1: the 1-minute load average.
load1() { cut -d' ' -f1 /proc/loadavg; }
