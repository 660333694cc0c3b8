#!/usr/bin/env bash
# Seed experiment 6: the store members, their leader, revision and db size.
source "$(dirname "$0")/lib.sh"
start_kplane

step "etcdctl endpoint status --write-out=table"
echo "$ $STORE_CTL_NAME endpoint status -w table"
out=$(kpstore endpoint status -w table)
echo "$out"
expect_match "$out" 'IS LEADER' 'the table header'
expect_match "$out" '\| *true *\|' 'one member is the leader'
n=$(grep -c '127.0.0.1' <<<"$out")
[[ $n == "$STORE_NODES" ]] || { echo "DEMO CHECK FAILED: $n members listed, want $STORE_NODES" >&2; exit 1; }
echo "  ok: $n members listed"
