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

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
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
echo "install-deps: done"
