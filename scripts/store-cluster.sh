#!/usr/bin/env bash
# Starts a 3-member kplane store cluster on loopback and waits until it has a
# leader. Members run in the background; the script prints their client URLs
# and pids, and `scripts/store-cluster.sh stop` stops them.
#
#   scripts/store-cluster.sh [start] [--dir DIR] [--base-port P] [--pki PKI]
#                            [-- extra kplane store flags]
#   scripts/store-cluster.sh stop [--dir DIR]
#
# Ports: member i (1..3) serves clients on P+i*10 and peers on P+i*10+1
# (defaults: P=12370 -> 12380/12381, 12390/12391, 12400/12401).
# The binary: build/kplane, or $KPLANE.
# --pki PKI: https client and peer URLs with etcd's TLS flags, client
# certificates required on both ports, from PKI/ca.crt, PKI/member.crt and
# .key (the members' pair) and PKI/client.crt and .key (what the script's
# health check presents): scripts/bench/lib.sh make_bench_pki writes them.
set -euo pipefail
cd "$(dirname "$0")/.."

cmd=start
if [[ $# -gt 0 && ( $1 == start || $1 == stop ) ]]; then cmd=$1; shift; fi
dir=/tmp/kplane-store-cluster
base=12370
extra=()
pki=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --dir) dir=$2; shift 2 ;;
    --base-port) base=$2; shift 2 ;;
    --pki) pki=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

if [[ $cmd == stop ]]; then
  pids=()
  for i in 1 2 3; do
    if [[ -f $dir/n$i.pid ]]; then
      pids+=("$(cat "$dir/n$i.pid")")
      kill "${pids[-1]}" 2>/dev/null || true
      rm -f "$dir/n$i.pid"
    fi
  done
  # Wait (up to 10 s, then SIGKILL) until they are gone, so that a start
  # right after this one finds its ports free.
  for p in "${pids[@]}"; do
    for _ in $(seq 1 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$p" 2>/dev/null || true
  done
  echo "stopped"
  exit 0
fi

bin=${KPLANE:-build/kplane}
[[ -x $bin ]] || { echo "build kplane first: cmake --build build --target kplane" >&2; exit 1; }
mkdir -p "$dir"
scheme=http
tls=()
curl_tls=()
if [[ -n $pki ]]; then
  scheme=https
  tls=(--cert-file "$pki/member.crt" --key-file "$pki/member.key"
    --trusted-ca-file "$pki/ca.crt" --client-cert-auth
    --peer-cert-file "$pki/member.crt" --peer-key-file "$pki/member.key"
    --peer-trusted-ca-file "$pki/ca.crt" --peer-client-cert-auth)
  curl_tls=(--cacert "$pki/ca.crt" --cert "$pki/client.crt" --key "$pki/client.key")
fi
ic=""
for i in 1 2 3; do
  ic+="${ic:+,}n$i=$scheme://127.0.0.1:$((base + i * 10 + 1))"
done
for i in 1 2 3; do
  "$bin" store --name "n$i" --data-dir "$dir/n$i" \
    --listen-client-urls "$scheme://127.0.0.1:$((base + i * 10))" \
    --listen-peer-urls "$scheme://127.0.0.1:$((base + i * 10 + 1))" \
    --initial-cluster "$ic" "${tls[@]}" "${extra[@]}" >>"$dir/n$i.log" 2>&1 &
  echo $! >"$dir/n$i.pid"
done
endpoints=""
for i in 1 2 3; do endpoints+="${endpoints:+,}$scheme://127.0.0.1:$((base + i * 10))"; done
for attempt in $(seq 1 100); do
  if curl -sf -m 2 "${curl_tls[@]}" "$scheme://127.0.0.1:$((base + 10))/health" >/dev/null 2>&1; then
    echo "cluster up: endpoints $endpoints (logs and data in $dir)"
    exit 0
  fi
  sleep 0.1
done
echo "no leader after 10 s; see $dir/n*.log" >&2
exit 1
