#!/usr/bin/env bash
# Writes testdata/etcd/etcd34.snapshot: what `etcdctl snapshot save` gets from
# a real etcd 3.4 (Debian's etcd-server 3.4.23) after these writes:
#   put foo v1 (rev 2), put bar b (3), put foo v2 (4), del bar (5),
#   lease grant 600 (id printed), put lk lv --lease (6), put foo v3 (7),
#   compact 4 --physical, put zed z (8)
# Read by kpctl/store/snapshot_restore_test.cc; what it holds is asserted in
# fixture_data.h (update the lease id there when regenerating).
# Usage: make_snapshot.sh [OUT]
set -euo pipefail
out=${1:-$(dirname "$0")/etcd34.snapshot}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
cport=$((30000 + RANDOM % 20000)); pport=$((cport + 1))
etcd --name e1 --data-dir "$dir/data" \
  --listen-client-urls http://127.0.0.1:$cport \
  --advertise-client-urls http://127.0.0.1:$cport \
  --listen-peer-urls http://127.0.0.1:$pport \
  --initial-advertise-peer-urls http://127.0.0.1:$pport \
  --initial-cluster e1=http://127.0.0.1:$pport >"$dir/log" 2>&1 &
pid=$!
ctl() { ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:$cport "$@"; }
for _ in $(seq 100); do ctl endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
ctl put foo v1 >/dev/null
ctl put bar b >/dev/null
ctl put foo v2 >/dev/null
ctl del bar >/dev/null
lease=$(ctl lease grant 600 | awk '{print $2}')
ctl put lk lv --lease "$lease" >/dev/null
ctl put foo v3 >/dev/null
ctl compact 4 --physical >/dev/null
ctl put zed z >/dev/null
ctl snapshot save "$out" >/dev/null
echo "lease $lease"
