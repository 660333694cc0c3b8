#!/usr/bin/env bash
# Seed experiment 5: each node heartbeats through a Lease in kube-node-lease.
source "$(dirname "$0")/lib.sh"
start_kplane

step "node leases (etcdctl get /registry/leases/kube-node-lease/ --prefix --keys-only)"
leases_listed() { kpstore get /registry/leases/kube-node-lease/ --prefix --keys-only | grep -q node-; }
wait_for 60 "the simulated nodes' leases" leases_listed
out=$(kpstore get /registry/leases/kube-node-lease/ --prefix --keys-only)
echo "$out"
expect_match "$out" '^/registry/leases/kube-node-lease/node-1$' 'the lease of node-1'
step "the lease is renewed: its revision moves"
rv1=$(k get lease -n kube-node-lease node-1 -o jsonpath='{.metadata.resourceVersion}')
wait_for 40 "a renewal of node-1's lease" bash -c "[[ \$(kubectl --kubeconfig '$KUBECONFIG_FILE' get lease -n kube-node-lease node-1 -o jsonpath='{.metadata.resourceVersion}') != $rv1 ]]"
k get lease -n kube-node-lease
echo "  ok: node-1's lease was renewed"
