#!/usr/bin/env bash
# Seed exercise 1: kill -9 the store's leader. The other two members elect a
# new leader (heartbeat 100 ms, election timeout 1000 ms); meanwhile
# `kubectl get pods` is served from the API server's watch cache, and writes
# wait or fail until the election is over. `kplane up` restarts the killed
# member a few seconds later and it catches up.
source "$(dirname "$0")/lib.sh"
[[ $STORE_NODES == 3 ]] || { echo "this demo needs KPLANE_DEMO_STORE_NODES=3" >&2; exit 2; }
start_kplane

leader_endpoint() {
  kpstore endpoint status 2>/dev/null | awk -F', ' '$5 == "true" { print $1 }'
}
member_of_port() {  # 2379 -> s1, +20000 -> s2, +30000 -> s3
  case $(( ${1##*:} - STORE_PORT )) in 0) echo s1 ;; 20000) echo s2 ;; 30000) echo s3 ;; esac
}

step "who leads (etcdctl endpoint status -w table)"
show_store endpoint status -w table
old=$(leader_endpoint)
[[ -n $old ]] || { echo "DEMO CHECK FAILED: no leader" >&2; exit 1; }
name=$(member_of_port "$old")
pid=$(cat "$DEMO_DIR/data/$name.pid")
echo "leader: $name at $old (pid $pid)"

step "kill -9 the leader while kubectl reads and writes"
probe_log=$DEMO_DIR/leader-kill-probe.log
: >"$probe_log"
(
  for i in $(seq 1 60); do
    t0=$(date +%s%N)
    if k get pods --request-timeout=5s >/dev/null 2>&1; then r=ok; else r=fail; fi
    echo "get-pods $(( ($(date +%s%N) - t0) / 1000000 ))ms $r" >>"$probe_log"
    sleep 0.1
  done
) &
probe=$!
trap 'kill $probe 2>/dev/null || true; stop_kplane' EXIT
others=$(tr ',' '\n' <<<"$STORE_ENDPOINTS" | grep -v -x "$old" | paste -sd, -)
t_kill=$(date +%s%N)
kill -9 "$pid"
new=""
until [[ -n $new && $new != "$old" ]]; do
  new=$(ETCDCTL_ENDPOINTS=$others leader_endpoint || true)
  (( ($(date +%s%N) - t_kill) / 1000000 < 30000 )) || { echo "DEMO CHECK FAILED: no new leader in 30s" >&2; exit 1; }
done
t_elected=$(date +%s%N)
until ETCDCTL_ENDPOINTS=$others kpstore put /demo/after-kill ok >/dev/null 2>&1; do :; done
t_write=$(date +%s%N)
until k create configmap after-kill --from-literal=k=v >/dev/null 2>&1; do sleep 0.05; done
t_kube=$(date +%s%N)
echo "new leader: $(member_of_port "$new") at $new"
echo "kill -> new leader seen:        $(( (t_elected - t_kill) / 1000000 )) ms"
echo "kill -> first store write:      $(( (t_write - t_kill) / 1000000 )) ms"
echo "kill -> first kubectl create:   $(( (t_kube - t_kill) / 1000000 )) ms"
wait $probe 2>/dev/null || true
step "kubectl get pods meanwhile (one line per call: latency, result)"
sort "$probe_log" | uniq -c | sort -rn | sed -n 1,5p
fails=$(grep -c ' fail$' "$probe_log" || true)
echo "  $(wc -l <"$probe_log") calls, $fails failed"
expect_match "$(cat "$probe_log")" ' ok$' 'kubectl get pods kept answering'

step "the killed member comes back and catches up"
# It answers again, as a follower (its IS LEADER column, the 5th, is false).
rejoined() { kpstore endpoint status --endpoints "$old" 2>/dev/null | awk -F', ' '$5 == "false" { ok = 1 } END { exit !ok }'; }
wait_for 60 "$name to rejoin" rejoined
show_store endpoint status -w table
