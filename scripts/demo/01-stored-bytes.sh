#!/usr/bin/env bash
# Seed experiment 1: a Pod as the store keeps it. The value is not JSON: it
# is the "k8s\0" magic, then a runtime.Unknown envelope (apiVersion "v1",
# kind "Pod") wrapping the Pod in Kubernetes' protobuf encoding.
source "$(dirname "$0")/lib.sh"
start_kplane

step "create a pod with kubectl"
show k run nginx-demo --image=nginx:1.25 --restart=Never
step "its raw bytes in the store (etcdctl get ... | xxd | head -5)"
echo "$ $STORE_CTL_NAME get /registry/pods/default/nginx-demo --print-value-only | xxd | head -5"
kpstore get /registry/pods/default/nginx-demo --print-value-only >"$DEMO_DIR/pod.bin"
out=$(xxd -l 80 "$DEMO_DIR/pod.bin")  # the first 5 lines, without a SIGPIPE
echo "$out"
expect_match "$out" '6b38 7300' 'the value starts with the bytes "k8s\0" (6b 38 73 00)'
expect_match "$out" 'v1\.\.*Pod|\.v1\.+Pod' 'the envelope names apiVersion v1 and kind Pod'
