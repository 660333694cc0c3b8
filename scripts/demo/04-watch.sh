#!/usr/bin/env bash
# Seed experiment 4: watch the store while a pod is created. Each change of
# the pod is one PUT event with a new revision; deletion is a DELETE.
source "$(dirname "$0")/lib.sh"
start_kplane

step "watch /registry/pods/default/ (etcdctl watch ... --prefix) in the background"
watch_out=$DEMO_DIR/watch.out
: >"$watch_out"
# From the next revision on, so nothing is missed however late it connects.
from=$(($(store_revision) + 1))
echo "$ $STORE_CTL_NAME watch /registry/pods/default/ --prefix --rev $from"
kpstore watch /registry/pods/default/ --prefix --rev "$from" >"$watch_out" 2>&1 &
watch_pid=$!
trap 'kill $watch_pid 2>/dev/null || true; stop_kplane' EXIT
step "create a pod, then delete it"
show k run watch-test --image=nginx:1.25 --restart=Never
show k delete pod watch-test --wait=false
wait_for 30 "the DELETE event" grep -q '^DELETE' "$watch_out"
kill $watch_pid 2>/dev/null || true
step "what the watch printed (event type and key; values are protobuf)"
out=$(grep -a -E '^(PUT|DELETE)$|^/registry/' "$watch_out")
echo "$out"
expect_match "$out" '^PUT$' 'a PUT event when the pod was created'
expect_match "$out" '^/registry/pods/default/watch-test$' 'the pod key'
expect_match "$out" '^DELETE$' 'a DELETE event when it was removed'
