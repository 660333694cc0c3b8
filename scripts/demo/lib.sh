# Shared by the demos in scripts/demo/: starts `kplane up` (unless one is
# already running), gives kubectl/kpctl wrappers pointing at it, and checks
# that what a demo prints is what the articles say you will see.
#
# Environment (all optional):
#   KPLANE_DEMO_DIR         data dir, kubeconfig and logs (/tmp/kplane-demo)
#   KPLANE_DEMO_API_PORT    API server port (6443)
#   KPLANE_DEMO_STORE_PORT  first store member's client port (2379)
#   KPLANE_DEMO_STORE_NODES 1 or 3 (3)
#   KPLANE_DEMO_NODES       simulated nodes (3)
#   KPLANE_DEMO_SIM_PORT    simulated nodes' control endpoint (10250)
#   KPLANE_DEMO_REUSE=1     use a `kplane up` already running with these
#                           settings instead of starting one
#   KPLANE_DEMO_FAST=1      shortened settings (used by the test suite)
#   KPLANE_DEMO_ETCDCTL     the store client the demos type: `etcdctl` (the
#                           real etcdctl 3.4 over gRPC; the default when it is
#                           on the PATH) or `kpctl` (`kpctl store`, our
#                           etcdctl over the JSON gateway)
#   ETCDCTL                 the etcdctl binary (etcdctl on the PATH)
set -euo pipefail

DEMO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KPLANE=${KPLANE:-$DEMO_ROOT/build/kplane}
KPCTL=${KPCTL:-$DEMO_ROOT/build/cmd/kpctl/kpctl}
DEMO_DIR=${KPLANE_DEMO_DIR:-/tmp/kplane-demo}
API_PORT=${KPLANE_DEMO_API_PORT:-6443}
STORE_PORT=${KPLANE_DEMO_STORE_PORT:-2379}
STORE_NODES=${KPLANE_DEMO_STORE_NODES:-3}
SIM_NODES=${KPLANE_DEMO_NODES:-3}
SIM_PORT=${KPLANE_DEMO_SIM_PORT:-10250}
SIM_URL=https://127.0.0.1:$SIM_PORT
FAST=${KPLANE_DEMO_FAST:-0}
KUBECONFIG_FILE=$DEMO_DIR/kubeconfig
API_URL=https://127.0.0.1:$API_PORT
# `kplane up` serves HTTPS with a PKI it makes in its data dir; curl trusts
# its CA and presents the admin's certificate, as kubectl does from the
# kubeconfig.
PKI_DIR=$DEMO_DIR/data/pki
kcurl() {
  curl --cacert "$PKI_DIR/ca.crt" --cert "$PKI_DIR/admin.crt" \
    --key "$PKI_DIR/admin.key" "$@"
}
# True when something listens on the API port (HTTP or HTTPS).
api_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$API_PORT") 2>/dev/null; }

# The store speaks etcd's v3 API over TLS and wants a client certificate
# the control plane's CA signed (etcd's --client-cert-auth, as kubeadm runs
# etcd); the admin's will do. etcdctl and `kpctl store` read these
# variables as etcdctl does (ETCDCTL_CACERT is etcdctl's --cacert, ...).
if [[ $STORE_NODES == 3 ]]; then
  STORE_ENDPOINTS=https://127.0.0.1:$STORE_PORT,https://127.0.0.1:$((STORE_PORT + 20000)),https://127.0.0.1:$((STORE_PORT + 30000))
else
  STORE_ENDPOINTS=https://127.0.0.1:$STORE_PORT
fi
export ETCDCTL_CACERT=$PKI_DIR/ca.crt
export ETCDCTL_CERT=$PKI_DIR/admin.crt
export ETCDCTL_KEY=$PKI_DIR/admin.key
# Both clients read their endpoints from here (etcdctl: ETCDCTL_API=3 is
# its default in 3.4; set anyway for older ones).
export ETCDCTL_ENDPOINTS=$STORE_ENDPOINTS
export ETCDCTL_API=3

for tool in "$KPLANE" "$KPCTL"; do
  [[ -x $tool ]] || { echo "missing $tool: build first (cmake --build build)" >&2; exit 1; }
done

ETCDCTL=${ETCDCTL:-etcdctl}
if [[ -z ${KPLANE_DEMO_ETCDCTL:-} ]]; then
  if command -v "$ETCDCTL" >/dev/null; then KPLANE_DEMO_ETCDCTL=etcdctl; else KPLANE_DEMO_ETCDCTL=kpctl; fi
fi
case $KPLANE_DEMO_ETCDCTL in
  etcdctl)
    command -v "$ETCDCTL" >/dev/null || { echo "KPLANE_DEMO_ETCDCTL=etcdctl but $ETCDCTL is not found" >&2; exit 1; }
    STORE_CTL=("$ETCDCTL")
    STORE_CTL_NAME=etcdctl
    ;;
  kpctl)
    STORE_CTL=("$KPCTL" store)
    STORE_CTL_NAME="kpctl store"
    ;;
  *) echo "KPLANE_DEMO_ETCDCTL must be etcdctl or kpctl, not '$KPLANE_DEMO_ETCDCTL'" >&2; exit 1 ;;
esac

k() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }
# The store client (etcdctl or kpctl store); both take etcdctl's arguments
# and print etcdctl's output.
# etcdctl refuses a flag that an ETCDCTL_* variable also sets ("conflicting
# environment variable ... is shadowed"), so --endpoints drops the variable.
# In a subshell (`kpstore watch ... &`, `$(kpstore ...)`) the client
# replaces the subshell, so `kill $!` stops the client itself: etcdctl's
# watch retries forever and would outlive the demo otherwise.
kpstore() {
  local a run=()
  [[ $BASHPID != "$$" ]] && run=(exec)
  for a in "$@"; do
    if [[ $a == --endpoints* ]]; then
      "${run[@]}" env -u ETCDCTL_ENDPOINTS "${STORE_CTL[@]}" "$@"
      return
    fi
  done
  "${run[@]}" "${STORE_CTL[@]}" "$@"
}
# Prints the store command as the reader would type it, then runs it.
show_store() { printf '$ %s %s\n' "$STORE_CTL_NAME" "$*"; kpstore "$@"; }

# A heading, so the output reads like the article's steps.
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# Prints a command, then runs it.
show() { printf '$ %s\n' "$*"; "$@"; }

# expect_match TEXT REGEX WHAT: fails the demo unless TEXT matches REGEX.
expect_match() {
  if ! grep -Eq -- "$2" <<<"$1"; then
    echo "DEMO CHECK FAILED: expected $3 (pattern: $2); got:" >&2
    echo "$1" >&2
    exit 1
  fi
  echo "  ok: $3"
}

# wait_for SECONDS WHAT CMD...: runs CMD until it succeeds.
wait_for() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "DEMO CHECK FAILED: timed out after ${secs}s waiting for $what" >&2
      exit 1
    fi
    sleep 0.2
  done
}

# Shortened node-lifecycle settings for the test suite: leases renewed every
# second, a node is NotReady 6 s after its last renewal, pods are evicted 3 s
# later. The defaults are kube's: 10 s, 40 s, 300 s.
FAST_FLAGS=()
if [[ $FAST == 1 ]]; then
  FAST_FLAGS=(--lease-renew-interval 1s --node-monitor-grace-period 6s
    --node-monitor-period 1s --pod-eviction-timeout 3s)
fi

KPLANE_PID=""
stop_kplane() {
  if [[ -n $KPLANE_PID ]]; then
    kill -TERM "$KPLANE_PID" 2>/dev/null || true
    wait "$KPLANE_PID" 2>/dev/null || true
    KPLANE_PID=""
  fi
}

# start_kplane [extra kplane up flags]: starts `kplane up` in the background
# (stopped when the demo exits) and waits until its API server answers.
start_kplane() {
  if [[ ${KPLANE_DEMO_REUSE:-0} == 1 ]]; then
    wait_for 5 "the running kplane at $API_URL" kcurl -sf "$API_URL/readyz"
    return
  fi
  if api_port_busy; then
    echo "something already serves $API_URL: stop it, or set KPLANE_DEMO_REUSE=1 to use it" >&2
    exit 1
  fi
  # Each demo starts from an empty control plane.
  rm -rf "$DEMO_DIR/data" "$KUBECONFIG_FILE"
  mkdir -p "$DEMO_DIR"
  "$KPLANE" up --data-dir "$DEMO_DIR/data" --kubeconfig-out "$KUBECONFIG_FILE" \
    --port "$API_PORT" --store-port "$STORE_PORT" \
    --store-nodes "$STORE_NODES" --nodes "$SIM_NODES" \
    --kubeletsim-port "$SIM_PORT" --controller-manager-port 0 \
    "${FAST_FLAGS[@]}" "$@" >"$DEMO_DIR/kplane-up.log" 2>&1 &
  KPLANE_PID=$!
  trap stop_kplane EXIT
  local deadline=$((SECONDS + 120))
  until [[ -f $KUBECONFIG_FILE ]] && kcurl -sf "$API_URL/readyz" >/dev/null 2>&1; do
    if ! kill -0 "$KPLANE_PID" 2>/dev/null; then
      echo "kplane up exited; its log:" >&2
      cat "$DEMO_DIR/kplane-up.log" >&2
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      echo "kplane up did not serve within 120s; log in $DEMO_DIR/kplane-up.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "kplane up is running (API $API_URL, store $STORE_ENDPOINTS, data $DEMO_DIR; store client: $STORE_CTL_NAME)"
}

# The store revision, from the header of a serializable-free get.
store_revision() {
  kpstore get / --prefix --keys-only --limit 1 -w json | jq -r '.header.revision'
}
