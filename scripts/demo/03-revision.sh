#!/usr/bin/env bash
# Seed experiment 3: one global revision, rising by one per write, whatever
# the key; an object's resourceVersion is the revision of its last write.
source "$(dirname "$0")/lib.sh"
start_kplane

step "the store's revision now (etcdctl get ... -w json | jq .header.revision)"
before=$(kpstore get /registry/pods/default/ --prefix -w json | jq -r '.header.revision')
echo "revision: $before"
step "three writes: create a configmap, change it, delete it"
show k create configmap rev-demo --from-literal=a=1
rv=$(k get configmap rev-demo -o jsonpath='{.metadata.resourceVersion}')
show k patch configmap rev-demo -p '{"data":{"a":"2"}}'
show k delete configmap rev-demo
after=$(kpstore get /registry/pods/default/ --prefix -w json | jq -r '.header.revision')
echo "revision: $after (the configmap was created at revision $rv)"
expect_match "$((after - before))" '^[3-9]$|^[1-9][0-9]+$' 'the revision rose by at least 3 (other components write too)'
expect_match "$rv" "^[0-9]+$" 'resourceVersion is a revision number'
((rv > before && rv <= after)) || { echo "DEMO CHECK FAILED: rv $rv not in ($before, $after]" >&2; exit 1; }
echo "  ok: the configmap's resourceVersion lies between the two revisions"
