#!/usr/bin/env bash
# Writes testdata/etcd/restored/: the data directory of member n1 that the
# real `etcdctl snapshot restore` (Debian's etcd-client 3.4.23) makes from
# etcd34.snapshot (make_snapshot.sh) for a new three-member cluster:
#   --name n1 --initial-cluster-token tok --initial-cluster
#   n1=http://10.0.0.1:2380,n2=http://10.0.0.2:2380,n3=http://10.0.0.3:2380
# i.e. member/snap/db (the snapshot's bbolt file, old members still in it),
# member/snap/0000000000000001-0000000000000003.snap and
# member/wal/0000000000000000-0000000000000000.wal. etcd preallocates the
# WAL to 64 MB of trailing zeros, which the reader stops at: they are cut
# here to keep the fixture small (the test adds them back).
# Read by storage/bolt/etcd_wal_test.cc and storage/server/etcd_import_test.cc.
# Usage: make_restored_dir.sh [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/restored}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ETCDCTL_API=3 etcdctl snapshot restore "$here/etcd34.snapshot" \
  --name n1 --initial-cluster-token tok \
  --initial-cluster n1=http://10.0.0.1:2380,n2=http://10.0.0.2:2380,n3=http://10.0.0.3:2380 \
  --initial-advertise-peer-urls http://10.0.0.1:2380 \
  --data-dir "$tmp/d" >/dev/null 2>&1
wal=$tmp/d/member/wal/0000000000000000-0000000000000000.wal
# Cut the zeros after the last record (records are 8-byte aligned).
python3 - "$wal" <<'PY'
import sys
p = sys.argv[1]
b = open(p, 'rb').read()
off = 0
while off + 8 <= len(b):
    w = int.from_bytes(b[off:off + 8], 'little')
    if w == 0:
        break
    size = w & ((1 << 56) - 1)
    pad = (w >> 56) & 7 if w >> 63 else 0
    off += 8 + size + pad
open(p, 'wb').write(b[:off])
PY
rm -rf "$out"
mkdir -p "$out"
cp -r "$tmp/d/member" "$out/"
find "$out" -type f | sort | xargs ls -l
