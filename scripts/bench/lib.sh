# shellcheck shell=bash
# Shared by the benchmark scripts (store.sh, put-leader.sh, apiserver.sh):
# finding a store's leader, waiting for processes, reading RESULT lines.
# Source it; it defines functions and the LEADER variable, nothing runs.
#
#   EPS=(http://127.0.0.1:12380 http://127.0.0.1:12390 http://127.0.0.1:12400)
#   wait_leader || exit 1
#   echo "${EPS[$LEADER]}"

# need_binaries [MORE...]: sets KPLANE and KPCTL (the build/ binaries unless
# the environment names others) and exits if they or MORE are missing.
need_binaries() {
  KPLANE=${KPLANE:-$PWD/build/kplane}
  KPCTL=${KPCTL:-$PWD/build/cmd/kpctl/kpctl}
  local b
  for b in "$KPLANE" "$KPCTL" "$@"; do
    [[ -x $b ]] || { echo "missing $b (cmake --build build --target kplane kpctl)" >&2; exit 1; }
  done
}

# find_leader: sets LEADER to the index (0-based) in EPS of the member that
# reports itself as leader in /v3/maintenance/status (kplane store and etcd
# answer alike), or -1 and returns 1 when none does right now.
# shellcheck disable=SC2034  # read by the scripts that source this file
LEADER=-1
find_leader() {
  LEADER=-1
  local i body mid lid
  for i in "${!EPS[@]}"; do
    body=$(curl -s -m 1 -X POST -d '{}' "${EPS[$i]}/v3/maintenance/status" || true)
    mid=$(sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p' <<<"$body")
    lid=$(sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' <<<"$body")
    if [[ -n $mid && $mid == "$lid" ]]; then LEADER=$i; return 0; fi
  done
  return 1
}

# wait_leader: find_leader, retried for up to 15 s.
wait_leader() {
  local _
  for _ in $(seq 1 150); do
    find_leader && return 0
    sleep 0.1
  done
  return 1
}

# wait_gone PID...: returns once none of the processes exists. Members are
# started disowned (no "Killed" note from the shell for the ones a row kills),
# so `wait` cannot be used; poll.
wait_gone() {
  local p
  for p in "$@"; do
    while [[ -n $p ]] && kill -0 "$p" 2>/dev/null; do sleep 0.05; done
  done
}

# field KEY LINE: the value of KEY=... in a RESULT line of the load tool.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# load1: the 1-minute load average.
load1() { cut -d' ' -f1 /proc/loadavg; }
