#!/usr/bin/env bash
# Start-up to a custom resource (issue 19; docs/performance.md, "Start-up
# to a custom resource"): how long from starting `kplane up` until a
# CustomResourceDefinition is served and a custom resource of it created,
# the path a controller test or a quick-start takes. Each run starts a
# fresh `kplane up` (a new temporary --data-dir, so a new PKI and an empty
# store; every port ephemeral, so it runs beside other clusters) and, with
# the kubectl on the PATH and the kubeconfig it writes, times from the
# moment the process is started:
#   api:  the kubeconfig written (kplane up writes it once the API server,
#         the controller manager and the simulated nodes have started);
#   crd:  `kubectl apply` of a CRD, then `kubectl wait
#         --for=condition=Established` returned;
#   cr:   `kubectl create` of a custom resource of it succeeded (retried
#         while discovery does not list the new kind yet).
# Each figure includes kubectl's own start (tens of ms per call). Prints
# one line per run and min / median / max of each column; stops what it
# started and removes its directories (kept with --keep, or on failure).
#
#   scripts/bench/crd_startup.sh [--runs 5] [--keep] [-- extra kplane up flags]
#
# Binary: build/kplane, or $KPLANE.
set -euo pipefail
cd "$(dirname "$0")/../.."

runs=5
keep=0
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=${2:-}; shift 2 || { echo "--runs needs a value" >&2; exit 2; } ;;
    --keep) keep=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (--help)" >&2; exit 2 ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || {
  echo "--runs: a positive integer, not '$runs'" >&2; exit 2; }
KPLANE=${KPLANE:-$PWD/build/kplane}
[[ -x $KPLANE ]] || {
  echo "missing $KPLANE (cmake --build build --target kplane, or set KPLANE)" >&2
  exit 1; }
command -v kubectl >/dev/null || { echo "kubectl is not on the PATH" >&2; exit 1; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

pid=""
dir=""
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  pid=""
  if [[ -n $dir && $keep == 0 ]]; then rm -rf "$dir"; fi
  dir=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {  # fail MESSAGE: keeps the run's directory for its logs
  echo "FAILED: $1 (logs in $dir)" >&2
  tail -n 20 "$dir/up.log" >&2 || true
  keep=1
  exit 3
}

# retry DEADLINE CMD...: runs CMD until it succeeds, every 20 ms.
retry() {
  local deadline=$1
  shift
  until "$@" >"$dir/last.out" 2>&1; do
    kill -0 "$pid" 2>/dev/null || fail "kplane up exited"
    [[ $(awk -v d="$deadline" -v n="$(now)" 'BEGIN { print (n > d) }') == 0 ]] ||
      fail "timed out: $* ($(tail -n 1 "$dir/last.out"))"
    sleep 0.02
  done
}

results=()
printf '%-4s %8s %8s %8s\n' run api_s crd_s cr_s
for run in $(seq 1 "$runs"); do
  dir=$(mktemp -d /tmp/kplane-crd-startup-XXXXXX)
  cat >"$dir/widget.yaml" <<'EOF'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 1}
EOF
  kc=(kubectl --kubeconfig "$dir/kubeconfig" --cache-dir "$dir/cache"
      --request-timeout=10s)
  t0=$(now)
  "$KPLANE" up --data-dir "$dir/data" --port 0 --store-port 0 \
    --kubeletsim-port 0 --controller-manager-port 0 \
    --kubeconfig-out "$dir/kubeconfig" "${extra[@]}" >"$dir/up.log" 2>&1 &
  pid=$!
  deadline=$(awk -v t="$t0" 'BEGIN { printf "%.3f", t + 60 }')
  retry "$deadline" test -s "$dir/kubeconfig"
  api=$(since "$t0")
  retry "$deadline" "${kc[@]}" apply -f testdata/crd/widgets.yaml
  "${kc[@]}" wait --for=condition=Established --timeout=60s \
    crd/widgets.example.com >"$dir/last.out" 2>&1 ||
    fail "the CRD was not Established: $(tail -n 1 "$dir/last.out")"
  crd=$(since "$t0")
  retry "$deadline" "${kc[@]}" create -f "$dir/widget.yaml"
  cr=$(since "$t0")
  printf '%-4s %8s %8s %8s\n' "$run" "$api" "$crd" "$cr"
  results+=("$api $crd $cr")
  cleanup
done

printf '%s\n' "${results[@]}" | awk -v n="$runs" '
  { for (c = 1; c <= 3; c++) v[c, NR] = $c }
  END {
    split("api crd cr", name, " ")
    printf "\n%-4s %8s %8s %8s   (seconds from process start, %d runs)\n",
           "", "min", "median", "max", n
    for (c = 1; c <= 3; c++) {
      # insertion sort of column c
      for (i = 1; i <= n; i++) s[i] = v[c, i]
      for (i = 2; i <= n; i++) {
        x = s[i]; j = i - 1
        while (j >= 1 && s[j] > x) { s[j + 1] = s[j]; j-- }
        s[j + 1] = x
      }
      med = (n % 2) ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
      printf "%-4s %8.3f %8.3f %8.3f\n", name[c], s[1], med, s[n]
    }
  }'
