#!/usr/bin/env bash
# Seed exercise 2: 100 ConfigMaps in 10 s, then compact and defrag. Each
# create is one revision; the db grows with every revision kept; compaction
# drops old revisions (the file keeps its size: freed pages are reused), and
# defragmentation rewrites the file so it shrinks.
source "$(dirname "$0")/lib.sh"
start_kplane
N=${KPLANE_DEMO_CONFIGMAPS:-100}

status_field() {  # revision|dbsize of the first endpoint, from -w json
  kpstore endpoint status -w json --endpoints "${STORE_ENDPOINTS%%,*}" |
    jq -r ".[0].Status.$1"
}
step "before"
rev0=$(status_field header.revision); db0=$(status_field dbSize)
echo "revision $rev0, db size $db0 bytes"

step "create $N ConfigMaps (kubectl create configmap cm-i --from-literal=key=value), 10 at a time"
t0=$SECONDS
for ((i = 0; i < N; i += 10)); do
  pids=()
  for ((j = i; j < i + 10 && j < N; j++)); do
    k create configmap "cm-$j" --from-literal=key=value >/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
done
echo "took $((SECONDS - t0)) s"
rev1=$(status_field header.revision); db1=$(status_field dbSize)
echo "revision $rev1 (+$((rev1 - rev0))), db size $db1 bytes (+$((db1 - db0)))"
((rev1 - rev0 >= N)) || { echo "DEMO CHECK FAILED: revision rose by $((rev1 - rev0)) < $N" >&2; exit 1; }
echo "  ok: at least one revision per ConfigMap"

step "compact to the current revision, then defrag every member"
show_store compact "$rev1"
show_store defrag --endpoints "$STORE_ENDPOINTS"
db2=$(status_field dbSize)
echo "db size after compact + defrag: $db2 bytes (was $db1)"
((db2 <= db1)) || { echo "DEMO CHECK FAILED: db grew after defrag" >&2; exit 1; }
echo "  ok: defrag did not grow the db"
n=$(k get configmaps -o name | grep -c '^configmap/cm-')
((n == N)) || { echo "DEMO CHECK FAILED: $n ConfigMaps after compaction, want $N" >&2; exit 1; }
echo "  ok: all $N ConfigMaps are still there (compaction drops history, not data)"
