#!/usr/bin/env bash
# fleet.sh --pods (ctest bench_fleet_pods_test): small runs of the fleet
# benchmark with pods, against the embedded store.
#   - bad --pods / --pods-per-deployment / --pods-timeout values are refused
#     with exit 2 and a message naming the flag, before anything starts;
#   - a run with --pods reports the pods as Running through the API server
#     (results.tsv: pods, time, pods/s, kubelet events written) and its
#     table has the pod columns;
#   - pods that cannot be scheduled (every node tainted NoSchedule) fail the
#     row after --pods-timeout with a note saying how many ran;
#   - results.tsv files from before --pods still make the same table;
#   - --apiserver-flag reaches the apiserver (a refused value stops the run
#     with its message) and --at-window-end runs with the processes' ids
#     (scripts/bench/fleet_memory.sh's breakdown of the apiserver).
# KPLANE and KPCTL name the binaries (as for fleet.sh).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=$(mktemp -d /tmp/kplane-fleet-pods-XXXXXX)
trap 'rm -rf "$out"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }

# col TSV NAME: NAME's value in the last row of TSV.
col() {
  awk -F'\t' -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i }
    END { print (k ? $k : "missing") }' "$1"
}

# 1. Bad values: exit 2 and the flag's name on stderr.
refused() {  # refused WANT_TEXT -- fleet.sh args...
  local want=$1 rc
  shift 2
  # Small and bounded, in case a value slips through and a run starts.
  timeout 60 bash scripts/bench/fleet.sh --backend embedded --quick --nodes 3 \
    --out "$out/refused" "$@" >"$out/refused.out" 2>"$out/refused.err"
  rc=$?
  if [[ $rc != 2 ]] || ! grep -q -- "$want" "$out/refused.err"; then
    bad "refused $*: exit $rc (want 2 and \"$want\"): $(cat "$out/refused.err")"
  else
    echo "ok   refused $*: $(cat "$out/refused.err")"
  fi
}
refused "--pods: a number of pods" -- --pods ten
refused "--pods: a number of pods" -- --pods -5
refused "--pods-per-deployment: a number of pods, at least 1" -- --pods 10 --pods-per-deployment 0
refused "--pods-timeout: seconds, at least 1" -- --pods 10 --pods-timeout 2m

# Small and fast: leases every 1 s, grace 4 s, a 3 s window.
small=(--backend embedded --quick --window 3 --settle 1 --lease-renew-interval 1s
  --grace 4s --monitor-period 1s)

# 2. 12 nodes, 30 pods in two Deployments (20 + 10).
timeout 240 bash scripts/bench/fleet.sh "${small[@]}" --nodes 12 --pods 30 \
  --pods-per-deployment 20 --apiserver-flag --watch-cache-history-window=90s \
  --at-window-end scripts/bench/fleet_memory.sh \
  --out "$out/run" >"$out/run.out" 2>"$out/run.err"
rc=$?
tsv=$out/run/results.tsv
if [[ $rc != 0 || ! -f $tsv ]]; then
  bad "run: exit $rc; stderr:"; cat "$out/run.err"
else
  before=$fail
  pods=$(col "$tsv" pods) took=$(col "$tsv" pods_running_s)
  rate=$(col "$tsv" pods_per_s) events=$(col "$tsv" pod_events)
  [[ $pods == 30 ]] || bad "run: pods=$pods, want 30"
  [[ $took =~ ^[0-9.]+$ ]] || bad "run: pods_running_s=$took, want seconds"
  [[ $rate =~ ^[0-9.]+$ ]] || bad "run: pods_per_s=$rate, want a rate"
  # Pulled, Created and Started for each pod's one container (kubeletsim
  # records events by default).
  if ! [[ $events =~ ^[0-9]+$ ]] || ((events < 90)); then
    bad "run: pod_events=$events, want >= 90"
  fi
  [[ $(col "$tsv" pod_events_window) =~ ^[0-9]+$ ]] ||
    bad "run: pod_events_window=$(col "$tsv" pod_events_window), want a count"
  [[ $(col "$tsv" note) == - ]] || bad "run: note $(col "$tsv" note)"
  grep -q "pods Running in (pods/s)" "$out/run.out" || bad "run: no pod column in the table"
  grep -qF "| 30 in $took s ($rate/s) |" "$out/run.out" || bad "run: table row: $(tail -1 "$out/run.out")"
  grep -q "^   pods: deployments=2 pods=30; 30 Running (API)" "$out/run.err" ||
    bad "run: no pods line: $(grep pods: "$out/run.err")"
  mem=$out/run/n12/at-window-end.out
  grep -q "^== apiserver pid [0-9]* threads [0-9]*" "$mem" &&
    grep -q 'apiserver_watch_cache_window_events{group="",resource="pods"}' "$mem" ||
    bad "run: --at-window-end: $(cat "$mem" 2>&1)"
  [[ $fail == "$before" ]] && echo "ok   run: 30 pods Running in ${took}s ($rate/s), $events kubelet events; memory breakdown at the window's end"
fi

# 3. Nowhere to schedule: the row fails after --pods-timeout, saying so.
timeout 240 bash scripts/bench/fleet.sh "${small[@]}" --nodes 3 --pods 5 --pods-timeout 4 \
  --out "$out/stuck" -- --register-with-taints bench=stuck:NoSchedule \
  >"$out/stuck.out" 2>"$out/stuck.err"
rc=$?
tsv=$out/stuck/results.tsv
note=$( [[ -f $tsv ]] && col "$tsv" note)
if [[ $rc != 0 || $note != "only 0 of 5 pods Running in 4s" || $(col "$tsv" pass) != no ]]; then
  bad "stuck: exit $rc, note \"$note\", pass $( [[ -f $tsv ]] && col "$tsv" pass); stderr:"
  cat "$out/stuck.err"
else
  echo "ok   stuck: pass=no, note \"$note\""
fi

# 3b. --apiserver-flag is the apiserver's: a value it refuses ends the run
#     (the watchdog names it, with its log's last lines).
timeout 120 bash scripts/bench/fleet.sh "${small[@]}" --nodes 3 \
  --apiserver-flag --watch-cache-history-window=-1s --out "$out/badflag" \
  >"$out/badflag.out" 2>"$out/badflag.err"
rc=$?
if [[ $rc == 0 ]] || ! grep -q "watch-cache-history-window must not be negative" "$out/badflag.err"; then
  bad "badflag: exit $rc; stderr:"; cat "$out/badflag.err"
else
  echo "ok   badflag: exit $rc, the apiserver's message"
fi

# 4. A results.tsv of the old format (no pod columns): the old table.
if python3 scripts/bench/fleet_probe.py table docs/performance-data/fleet-quiet-2026-11-29.tsv \
    >"$out/old.md" 2>&1 && ! grep -q "pods Running" "$out/old.md" &&
    [[ $(head -2 "$out/old.md" | tail -1) == "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" ]]; then
  echo "ok   old results.tsv: the 15-column table"
else
  bad "old results.tsv:"; cat "$out/old.md"
fi
exit $fail
