#!/usr/bin/env bash
# The gRPC proxy's cost (docs/store.md, "The gRPC proxy"): one kplane store
# member, and `kpctl store bench` over gRPC against it directly, through
# `kplane store grpc-proxy start` (one or two kplane binaries, e.g. before
# and after a change) and through etcd 3.4's `etcd grpc-proxy start`, the
# paths alternated within each round so that all figures share the
# machine's load. Workloads: serializable ranges, linearizable ranges and
# puts (1000 keys), at CLIENTS clients each.
#
#   scripts/bench/grpc_proxy.sh                     # build/ binaries
#   KPLANE_BEFORE=/tmp/kplane-old ROUNDS=2 scripts/bench/grpc_proxy.sh
#   TLS=1 scripts/bench/grpc_proxy.sh   # every proxy serves TLS (--cert-file,
#                                       # a P-256 pair made with openssl);
#                                       # the member and "direct" stay plaintext
#
# Prints one line per run: round, path, workload, clients, ops/s, p50 ms,
# the proxy's CPU per operation in µs (its /proc ticks over the run; "-"
# for direct), the 1-minute load average. Needs /usr/bin/etcd (3.4) for etcd's proxy.
# The member is always the KPLANE binary's, so only the proxy differs.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=lib.sh
source scripts/bench/lib.sh
need_binaries /usr/bin/etcd
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-4s}
CLIENTS=${CLIENTS:-1,16}
KEYS=${KEYS:-1000}
TLS=${TLS:-0}

dir=$(mktemp -d /tmp/kplane-proxybench-XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait_gone "${PIDS[@]}"
  rm -rf "$dir"
}
trap cleanup EXIT

"$KPLANE" store --name n1 --data-dir "$dir/n1" \
  --listen-client-urls http://127.0.0.1:12370 \
  --listen-peer-urls http://127.0.0.1:12371 \
  --initial-cluster n1=http://127.0.0.1:12371 \
  --log-level warning >>"$dir/n1.log" 2>&1 &
PIDS+=($!)
# shellcheck disable=SC2034  # read by wait_leader (lib.sh)
EPS=(http://127.0.0.1:12370)
wait_leader || { echo "the member did not start ($dir/n1.log)" >&2; exit 1; }

# With TLS=1: a self-signed P-256 pair for 127.0.0.1, served by every proxy
# and trusted by the load tool.
SERVE_TLS=()
CLIENT_TLS=()
if [[ $TLS == 1 ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 1 \
    -keyout "$dir/proxy.key" -out "$dir/proxy.crt" 2>/dev/null
  SERVE_TLS=(--cert-file "$dir/proxy.crt" --key-file "$dir/proxy.key")
  CLIENT_TLS=(--cacert "$dir/proxy.crt")
fi

# wait_port PORT: until something accepts on 127.0.0.1:PORT (10 s).
wait_port() {
  local _
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# start_proxy NAME: the proxy of that path on 127.0.0.1:23790; sets PROXY.
PROXY=
start_proxy() {
  case $1 in
    etcd)
      /usr/bin/etcd grpc-proxy start --endpoints=127.0.0.1:12370 \
        --listen-addr=127.0.0.1:23790 --data-dir "$dir/etcd.proxy" \
        "${SERVE_TLS[@]}" >>"$dir/proxy-etcd.log" 2>&1 &
      ;;
    *)
      "${BIN[$1]}" store grpc-proxy start --endpoints=127.0.0.1:12370 \
        --listen-addr=127.0.0.1:23790 "${SERVE_TLS[@]}" \
        >>"$dir/proxy-$1.log" 2>&1 &
      ;;
  esac
  PROXY=$!
  PIDS+=("$PROXY")
  wait_port 23790 || { echo "proxy $1 did not start" >&2; exit 1; }
}

declare -A BIN=([kplane]=$KPLANE)
PATHS=(direct kplane)
if [[ -n ${KPLANE_BEFORE:-} ]]; then
  BIN[kplane-before]=$KPLANE_BEFORE
  PATHS=(direct kplane-before kplane)
fi
PATHS+=(etcd)

WORKLOADS=("range --serializable" "range" "put")
printf '%-5s %-13s %-16s %7s %10s %8s %11s %6s\n' round path workload \
  clients ops/s p50_ms proxy_us_op load1
for round in $(seq 1 "$ROUNDS"); do
  for path in "${PATHS[@]}"; do
    url=http://127.0.0.1:12370
    tls=()
    pids=()
    if [[ $path != direct ]]; then
      start_proxy "$path"
      pids=(--server-pids "$PROXY")
      url=http://127.0.0.1:23790
      if [[ $TLS == 1 ]]; then
        url=https://127.0.0.1:23790
        tls=("${CLIENT_TLS[@]}")
      fi
    fi
    for w in "${WORKLOADS[@]}"; do
      fill=()
      [[ $w == range* ]] && fill=(--fill "$KEYS")
      # shellcheck disable=SC2086  # $w is the workload and its flag
      out=$("$KPCTL" store bench $w --protocol grpc \
        --endpoints "$url" "${tls[@]}" "${pids[@]}" --clients "$CLIENTS" \
        --duration "$DURATION" --key-space "$KEYS" "${fill[@]}" 2>&1) || {
        echo "$out" >&2
        exit 1
      }
      while read -r line; do
        us_op=-
        if [[ $path != direct ]]; then
          us_op=$(awk -v c="$(field server_cpu_s "$line")" \
            -v n="$(field operations "$line")" \
            'BEGIN { if (n > 0) printf "%.1f", c * 1e6 / n; else print "-" }')
        fi
        printf '%-5s %-13s %-16s %7s %10s %8s %11s %6s\n' "$round" "$path" \
          "${w/ --serializable/-serial}" "$(field clients "$line")" \
          "$(field ops_per_s "$line")" "$(field p50_ms "$line")" "$us_op" \
          "$(load1)"
      done < <(grep '^RESULT' <<<"$out")
    done
    if [[ $path != direct ]]; then
      kill "$PROXY"
      wait_gone "$PROXY"
    fi
  done
done
