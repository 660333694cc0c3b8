#!/usr/bin/env bash
# Applies every manifest in examples/manifests with kubectl, twice: the first
# time creates each object, the second changes nothing. Keeps the examples
# from rotting (the test suite runs this).
source "$(dirname "$0")/lib.sh"
start_kplane
M=$DEMO_ROOT/examples/manifests

step "kubectl apply -f examples/manifests (namespaces first)"
out=$(k apply -f "$M/namespace.yaml" && k apply -f "$M" && k apply -f "$M/rolling-update/web-v1.yaml")
echo "$out"
for o in 'namespace/demo' 'configmap/web-config' 'secret/web-credentials' \
  'service/web' 'deployment.apps/web' 'pod/batch-worker' \
  'lease.coordination.k8s.io/example-lock' 'deployment.apps/rollout'; do
  expect_match "$out" "^$o (created|unchanged|configured)" "$o applied"
done

step "apply again: nothing changes"
again=$(k apply -f "$M")
echo "$again"
if grep -Eq ' (created|configured)$' <<<"$again"; then
  echo "DEMO CHECK FAILED: a second apply changed something" >&2
  exit 1
fi
echo "  ok: every object unchanged"

step "what is there"
show k get deploy,cm,secret,svc,pod,lease -n demo
pw=$(k get secret web-credentials -n demo -o jsonpath='{.data.password}' | base64 -d)
[[ $pw == s3cr3t ]] || { echo "DEMO CHECK FAILED: secret password is '$pw'" >&2; exit 1; }
echo "  ok: the secret round-trips"
