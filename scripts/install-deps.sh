#!/usr/bin/env bash
# Installs every build and test dependency of kplane from Debian's packages.
# Safe to run twice: apt-get install is idempotent and we skip the update when
# everything is already present.
set -euo pipefail

# Only what the build, the tests and scripts/ use directly (libraries the
# ones below need, such as zlib for RocksDB or the googletest sources,
# come with them).
packages=(
  build-essential cmake ninja-build ccache
  rapidjson-dev
  libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
  # RE2 (Go's regexp syntax, linear time): CRD schema patterns
  # (apiserver/crd_schema.h). libgrpc-dev pulls it in too; named because we
  # use it directly.
  libre2-dev
  # zlib: SPDY/3.1's compressed header blocks (net/spdy.h, pods/exec for
  # kubectl before 1.30). librocksdb-dev pulls it in too; named because we
  # use it directly.
  zlib1g-dev
  librocksdb-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  etcd-server etcd-client
  # Go's clientv3 checks (tests/e2e/store/go) and etcd's own e2e suite
  # (scripts/etcd-e2e.sh), built in GOPATH mode from Debian's sources.
  golang-go golang-etcd-server-dev
  curl python3 xxd jq
  # The Python client check (tests/e2e/kubectl: load_kube_config, list nodes).
  python3-kubernetes
  # The clang job (scripts/clang-checks.sh): clang 14 and its sanitizer
  # runtimes.
  clang-14 libclang-rt-14-dev
  # The web view's browser test (tests/e2e/ui): headless chromium driven over
  # the DevTools protocol by Debian's python3 with python3-websocket.
  chromium python3-websocket
)

# Debian 12's own kubectl (1.20, package kubernetes-client) for the e2e
# suites' oldest client (tests/e2e/kubectl/kubectl_versions.h): unpacked, not
# installed, so that it does not replace the kubectl on the PATH.
# scripts/test.sh points KPLANE_KUBECTL_1_20 at it. Best effort: without it
# the 1.20 cases are skipped with a message.
kubectl_120_dir="${KPLANE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kplane}/kubectl-1.20"
unpack_kubectl_120() {
  [ -x "$kubectl_120_dir/usr/bin/kubectl" ] && return 0
  local tmp
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download -qq kubernetes-client >/dev/null 2>&1) &&
     mkdir -p "$kubectl_120_dir" &&
     dpkg -x "$tmp"/kubernetes-client_*.deb "$kubectl_120_dir"; then
    echo "install-deps: kubectl 1.20 unpacked in $kubectl_120_dir"
  else
    echo "install-deps: warning: could not unpack Debian's kubernetes-client;" \
         "the kubectl 1.20 e2e cases will be skipped" >&2
  fi
  rm -rf "$tmp"
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  unpack_kubectl_120
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian's etcd-server package may start a system etcd on 2379; kplane's tests
# start their own on ephemeral ports, so a system one is only noise.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  $SUDO systemctl stop etcd || true
fi
unpack_kubectl_120
echo "install-deps: done"
