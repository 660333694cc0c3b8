#!/usr/bin/env bash
# Seed exercise 3: watch /registry/pods/default/ in the store during a
# rolling update (image change) and line each pod's events up with its
# phase: a new pod is created (PUT), bound, and goes Pending →
# ContainerCreating → Running through more PUTs; old pods get a
# deletionTimestamp (PUT) and are removed (DELETE).
source "$(dirname "$0")/lib.sh"
start_kplane
M=$DEMO_ROOT/examples/manifests/rolling-update

step "deploy v1 and wait for it"
show k apply -f "$M/web-v1.yaml"
show k rollout status deployment/rollout --timeout=180s

step "watch the store and the API while v2 rolls out"
store_events=$DEMO_DIR/store-watch.json
api_events=$DEMO_DIR/api-watch.json
from=$(($(store_revision) + 1))
echo "$ $STORE_CTL_NAME watch /registry/pods/default/rollout- --prefix --rev $from -w json"
kpstore watch /registry/pods/default/rollout- --prefix --rev "$from" -w json >"$store_events" 2>&1 &
w1=$!
k get pods -l app=rollout -w --output-watch-events -o json >"$api_events" 2>/dev/null &
w2=$!
trap 'kill $w1 $w2 2>/dev/null || true; stop_kplane' EXIT
show k apply -f "$M/web-v2.yaml"
show k rollout status deployment/rollout --timeout=180s
sleep 1
kill $w1 $w2 2>/dev/null || true
wait $w1 $w2 2>/dev/null || true

step "each pod's store events next to its phase (joined on revision = resourceVersion)"
out=$(python3 - "$store_events" "$api_events" <<'PY'
import base64, json, sys
def objects(path):
    text, dec, i, out = open(path).read(), json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i] not in '{': i += 1
        if i >= len(text): return out
        try:
            o, i = dec.raw_decode(text, i)
            out.append(o)
        except ValueError:
            i += 1
phase = {}  # resourceVersion -> "Phase[/waiting reason]"
for e in objects(sys.argv[2]):
    o = e.get('object', {})
    st = o.get('status', {})
    p = st.get('phase', '?')
    for cs in st.get('containerStatuses', []):
        w = cs.get('state', {}).get('waiting')
        if w: p += '/' + w.get('reason', '')
    if o.get('metadata', {}).get('deletionTimestamp'): p += ' (terminating)'
    phase[o.get('metadata', {}).get('resourceVersion')] = p
pods = {}
for msg in objects(sys.argv[1]):
    for ev in msg.get('Events', []):
        kv = ev['kv']
        key = base64.b64decode(kv['key']).decode()
        rev = str(kv['mod_revision'])
        # etcdctl -w json prints the event type as its enum number.
        typ = 'DELETE' if ev.get('type') in (1, 'DELETE') else 'PUT'
        pods.setdefault(key.rsplit('/', 1)[1], []).append(
            f"{typ}@{rev}" + ('' if typ == 'DELETE' else ' ' + phase.get(rev, '?')))
for name, evs in sorted(pods.items()):
    print(f"{name}:")
    for e in evs: print(f"    {e}")
PY
)
echo "$out"
expect_match "$out" 'PUT@[0-9]+ Pending' 'a new pod written while Pending'
expect_match "$out" 'ContainerCreating' 'a pod seen ContainerCreating'
expect_match "$out" 'PUT@[0-9]+ Running' 'a pod written when Running'
expect_match "$out" 'DELETE@[0-9]+' 'old pods deleted'
