#!/usr/bin/env bash
# Builds storecheck (Go's clientv3 from Debian's golang-etcd-server-dev, GOPATH
# mode, no network) and runs it: the checker self-test, then the checks
# against a 3-member etcd 3.4 and/or a 3-member `kplane store`.
#
#   run.sh build               build and run the checker self-test
#   run.sh etcd|kplane         build (if needed) and check that system
# Environment: KPLANE_BIN (the kplane binary), STORECHECK_OUT (build and
# data dir; default /tmp/storecheck-$USER), ETCD_BIN (default /usr/bin/etcd).
# Exit 77 (ctest's skip) when go, clientv3's sources or the server binary
# are missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${STORECHECK_OUT:-/tmp/storecheck-${USER:-root}}"
mode="${1:-build}"
skip() { echo "SKIP: $*"; exit 77; }

command -v go >/dev/null || skip "go is not installed (apt-get install golang-go)"
gosrc=/usr/share/gocode
[ -d "$gosrc/src/go.etcd.io/etcd/clientv3" ] ||
  skip "clientv3 sources missing (apt-get install golang-etcd-server-dev)"

mkdir -p "$out"
bin="$out/storecheck"
build() {
  # Rebuilt when a source is newer than the binary; GOCACHE keeps it quick.
  if [ ! -x "$bin" ] || [ -n "$(find "$here/storecheck" -newer "$bin" -name '*.go')" ]; then
    (cd "$here/storecheck" &&
      GO111MODULE=off GOPATH="$gosrc" GOCACHE="$out/gocache" GOFLAGS= \
        go build -o "$bin.tmp" . && mv "$bin.tmp" "$bin")
  fi
}

case "$mode" in
  build)
    build
    exec "$bin" -selftest
    ;;
  etcd)
    etcd="${ETCD_BIN:-/usr/bin/etcd}"
    [ -x "$etcd" ] || skip "$etcd is absent (apt-get install etcd-server)"
    build
    rm -rf "$out/etcd"
    # etcd 3.4.23 answers RequestProgress with the current revision even to
    # a watcher still catching up (etcd-io/etcd#15220): reported, not failed.
    exec "$bin" -server "$etcd" -dir "$out/etcd" -tolerate-etcd-15220
    ;;
  kplane)
    kplane="${KPLANE_BIN:-}"
    [ -n "$kplane" ] && [ -x "$kplane" ] || skip "kplane binary absent (build target kplane; KPLANE_BIN=$kplane)"
    build
    rm -rf "$out/kplane"
    exec "$bin" -server "$kplane store" -dir "$out/kplane"
    ;;
  *)
    echo "usage: $0 build|etcd|kplane" >&2
    exit 2
    ;;
esac
