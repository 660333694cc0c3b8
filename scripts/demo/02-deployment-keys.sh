#!/usr/bin/env bash
# Seed experiment 2: every Deployment is one key under /registry/deployments/.
source "$(dirname "$0")/lib.sh"
start_kplane

step "create two deployments"
show k create deployment web --image=nginx:1.25 --replicas=2
show k create deployment api --image=nginx:1.25 --replicas=1 -n kube-system
step "list their keys (etcdctl get /registry/deployments/ --prefix --keys-only)"
echo "$ $STORE_CTL_NAME get /registry/deployments/ --prefix --keys-only"
out=$(kpstore get /registry/deployments/ --prefix --keys-only)
echo "$out"
expect_match "$out" '^/registry/deployments/default/web$' 'the key of default/web'
expect_match "$out" '^/registry/deployments/kube-system/api$' 'the key of kube-system/api'
