#!/usr/bin/env bash
# The user story: stop a simulated node's heartbeats (as if its kubelet
# crashed). The node lifecycle controller marks it NotReady once its Lease
# is older than the grace period, taints it, evicts its pods after their
# toleration, and the ReplicaSet controller replaces them on other nodes.
# Resume it and it is Ready again.
source "$(dirname "$0")/lib.sh"
start_kplane

step "nodes"
wait_for 60 "all nodes Ready" k wait --for=condition=Ready node --all --timeout=5s
show k get nodes
step "a deployment of 6 pods over the nodes"
show k create deployment spread --image=nginx:1.25 --replicas=6
show k rollout status deployment/spread --timeout=180s
victim=${KPLANE_DEMO_VICTIM:-node-2}
k get pods -l app=spread -o wide
before=$(k get pods -l app=spread -o jsonpath="{range .items[?(@.spec.nodeName=='$victim')]}{.metadata.name}{'\n'}{end}")
echo "pods on $victim: $(echo $before)"

step "stop $victim's heartbeats (kpctl sim stop-node $victim)"
k get nodes -w >"$DEMO_DIR/nodes-watch.txt" 2>&1 &
watcher=$!
trap 'kill $watcher 2>/dev/null || true; stop_kplane' EXIT
t0=$SECONDS
show "$KPCTL" sim --kubeconfig "$KUBECONFIG_FILE" --endpoint "$SIM_URL" stop-node "$victim"
ready() { k get node "$victim" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
until [[ $(ready) != True ]]; do sleep 0.2; ((SECONDS - t0 < 180)) || { echo "DEMO CHECK FAILED: $victim never went NotReady" >&2; exit 1; }; done
echo "$victim is NotReady after $((SECONDS - t0)) s (Ready=$(ready))"
replaced() {
  [[ $(k get pods -l app=spread -o jsonpath="{range .items[?(@.status.phase=='Running')]}{.spec.nodeName}{' '}{.metadata.deletionTimestamp}{'\n'}{end}" |
    awk -v v="$victim" '$1 != v && $2 == ""' | wc -l) -ge 6 ]]
}
wait_for 300 "6 Running pods off $victim" replaced
echo "its pods were replaced on other nodes $((SECONDS - t0)) s after the stop"
k get pods -l app=spread -o wide
kill $watcher 2>/dev/null || true
step "kubectl get nodes -w saw"
cat "$DEMO_DIR/nodes-watch.txt"
expect_match "$(cat "$DEMO_DIR/nodes-watch.txt")" "^$victim +NotReady" "$victim shown NotReady"

step "resume $victim"
show "$KPCTL" sim --kubeconfig "$KUBECONFIG_FILE" --endpoint "$SIM_URL" resume-node "$victim"
wait_for 60 "$victim Ready again" bash -c "[[ \$(kubectl --kubeconfig '$KUBECONFIG_FILE' get node $victim -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}') == True ]]"
show k get nodes
echo "  ok: $victim is Ready again"
