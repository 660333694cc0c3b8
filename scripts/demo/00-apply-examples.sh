#!/usr/bin/env bash
# Applies every manifest in examples/manifests with kpctl, then again with
# kubectl and with kpctl: the first time creates each object, the others
# change nothing (both use kubectl's last-applied-configuration). Keeps the examples
# from rotting (the test suite runs this).
source "$(dirname "$0")/lib.sh"
start_kplane
M=$DEMO_ROOT/examples/manifests

kp() { KUBECONFIG=$KUBECONFIG_FILE "$KPCTL" "$@"; }

step "kpctl apply -f examples/manifests (namespaces first)"
out=$(kp apply -f "$M/namespace.yaml" && kp apply -f "$M" && kp apply -f "$M/rolling-update/web-v1.yaml")
echo "$out"
for o in 'namespace/demo' 'configmap/web-config' 'secret/web-credentials' \
  'service/web' 'deployment.apps/web' 'pod/batch-worker' \
  'lease.coordination.k8s.io/example-lock' 'deployment.apps/rollout'; do
  expect_match "$out" "^$o (created|unchanged|configured)" "$o applied"
done

for tool in kubectl kpctl; do
  step "$tool apply -f examples/manifests again: nothing changes"
  if [[ $tool == kubectl ]]; then again=$(k apply -f "$M"); else again=$(kp apply -f "$M"); fi
  echo "$again"
  if grep -Eq ' (created|configured)$' <<<"$again"; then
    echo "DEMO CHECK FAILED: applying again with $tool changed something" >&2
    exit 1
  fi
  expect_match "$again" '^deployment.apps/web unchanged$' "$tool sees every object unchanged"
done

step "what is there"
show k get deploy,cm,secret,svc,pod,lease -n demo
pw=$(k get secret web-credentials -n demo -o jsonpath='{.data.password}' | base64 -d)
[[ $pw == s3cr3t ]] || { echo "DEMO CHECK FAILED: secret password is '$pw'" >&2; exit 1; }
echo "  ok: the secret round-trips"
