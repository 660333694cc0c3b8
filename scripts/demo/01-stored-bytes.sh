#!/usr/bin/env bash
# Seed experiment 1: a Pod as the store keeps it. The value is not JSON: it
# is the "k8s\0" magic, then a runtime.Unknown envelope (apiVersion "v1",
# kind "Pod") wrapping the Pod in Kubernetes' protobuf encoding.
#
# Then a Secret: `kplane up` encrypts Secrets at rest by default (a generated
# aesgcm key in <data-dir>/encryption-config.yaml), so its value is kube's
# "k8s:enc:aesgcm:v1:key1:" + nonce + ciphertext, and its bytes are in no
# file of the data directory. Last, the same Secret with
# `kplane up --secrets-encryption=false`: readable in the store and on disk.
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

SECRET_TEXT=kplane-demo-s3cret-$$
# secret_bytes NAME: the Secret's stored value, and what grep finds on disk.
secret_bytes() {
  echo "$ $STORE_CTL_NAME get /registry/secrets/default/$1 --print-value-only | xxd | head -4"
  kpstore get "/registry/secrets/default/$1" --print-value-only >"$DEMO_DIR/secret.bin"
  xxd -l 64 "$DEMO_DIR/secret.bin"
  echo "$ grep -c $SECRET_TEXT <stored value>"
  stored_hits=$(grep -c --binary-files=text -- "$SECRET_TEXT" "$DEMO_DIR/secret.bin" || true)
  echo "$stored_hits"
  echo "$ grep -rl $SECRET_TEXT \$DATA_DIR   # WAL, raft log, SST files, snapshots"
  disk_hits=$(grep -rl --binary-files=text -- "$SECRET_TEXT" "$DEMO_DIR/data" || true)
  echo "${disk_hits:-(no file)}"
}

if [[ ${KPLANE_DEMO_REUSE:-0} == 1 ]]; then
  echo "(KPLANE_DEMO_REUSE=1: the Secret part needs its own kplane up; skipped)"
  exit 0
fi

step "a Secret, with encryption at rest (kplane up's default)"
show k create secret generic db-pass --from-literal=password="$SECRET_TEXT"
secret_bytes db-pass
expect_match "$(head -c 23 "$DEMO_DIR/secret.bin")" '^k8s:enc:aesgcm:v1:key1:$' \
  'the value is kube'"'"'s prefix k8s:enc:aesgcm:v1:key1: then nonce and ciphertext'
expect_match "$stored_hits" '^0$' 'the stored value does not hold the password'
expect_match "${disk_hits:-none}" '^none$' 'no file of the data directory holds the password'
out=$(k get secret db-pass -o jsonpath='{.data.password}' | base64 -d)
echo "$ kubectl get secret db-pass -o jsonpath='{.data.password}' | base64 -d"
echo "$out"
expect_match "$out" "^$SECRET_TEXT\$" 'the API server decrypts it for its clients'
echo "$ head -12 $DEMO_DIR/data/encryption-config.yaml | sed 's/secret: .*/secret: <32 random bytes, base64>/'"
sed 's/secret: .*/secret: <32 random bytes, base64>/' "$DEMO_DIR/data/encryption-config.yaml" | grep -v '^#'
expect_match "$(stat -c %a "$DEMO_DIR/data/encryption-config.yaml")" '^600$' 'the key file is private (0600)'

step "the same Secret with kplane up --secrets-encryption=false"
stop_kplane
start_kplane --secrets-encryption=false
show k create secret generic db-pass --from-literal=password="$SECRET_TEXT"
secret_bytes db-pass
expect_match "$(xxd -l 4 -p "$DEMO_DIR/secret.bin")" '^6b387300$' 'the value is the plain envelope (k8s\0 ...)'
expect_match "$stored_hits" '^1$' 'the stored value holds the password in clear'
expect_match "${disk_hits:-none}" 'data/' 'files of the data directory hold the password in clear'
