#!/usr/bin/env bash
# Breaks down the memory of the processes of a fleet.sh run (issue 20;
# docs/performance.md, "Where the memory goes"). Meant for
#   scripts/bench/fleet.sh ... --at-window-end 'scripts/bench/fleet_memory.sh [--malloc-stats]'
# which sets API_PID, STORE_PIDS, CM_PID, SIM_PID, API_URL, STORE_EPS and
# FLEET_DIR. For each process: threads, smaps_rollup's Rss / Anonymous /
# file, and smaps' resident MB per kind of mapping ([heap], anonymous:
# glibc's other arenas and large allocations, file: binary, libraries,
# mapped files). --malloc-stats also has gdb call glibc's malloc_stats() in
# each process (it pauses the process for a moment): per arena "system
# bytes" (held from the system) and "in use bytes" (live allocations),
# printed to THAT process's stderr, i.e. the end of its log. Then the API
# server's watch cache gauges (events each window holds, watchers) and
# every store member's status (revision, raft index, db size).
set -uo pipefail
gdb_stats=0
case ${1:-} in
  --malloc-stats) gdb_stats=1 ;;
  "") ;;
  *) echo "usage: fleet_memory.sh [--malloc-stats] (run by fleet.sh --at-window-end)" >&2; exit 2 ;;
esac
for v in API_PID STORE_PIDS CM_PID SIM_PID API_URL STORE_EPS; do
  [[ -v $v ]] || { echo "fleet_memory.sh: $v is not set (run it from fleet.sh --at-window-end)" >&2; exit 2; }
done
mem() {  # mem NAME PID
  local name=$1 pid=$2
  [[ -r /proc/$pid/smaps ]] || { echo "== $name pid $pid: gone"; return; }
  echo "== $name pid $pid threads $(ls "/proc/$pid/task" | wc -l)"
  grep -E '^(Rss|Anonymous|Pss_File):' "/proc/$pid/smaps_rollup" | tr -s ' ' | paste -sd' '
  awk '/^[0-9a-f]+-[0-9a-f]+ / {
         cls = $6
         if (cls == "") cls = "anonymous"; else if (cls ~ /^\//) cls = "file"
       }
       /^Rss:/ { rss[cls] += $2 }
       END { for (c in rss) if (rss[c] >= 1024) printf "  %-10s %7.1f MB\n", c, rss[c] / 1024 }' \
    "/proc/$pid/smaps"
  if ((gdb_stats)); then
    timeout 60 gdb -p "$pid" -batch -ex 'call (void)malloc_stats()' >/dev/null 2>&1 ||
      echo "  gdb malloc_stats failed"
  fi
}
mem apiserver "$API_PID"
i=0
for p in $STORE_PIDS; do i=$((i + 1)); mem "store-member-$i" "$p"; done
mem controller-manager "$CM_PID"
mem kubeletsim "$SIM_PID"
echo "== apiserver watch caches (non-zero)"
curl -s "$API_URL/metrics" |
  grep -E '^apiserver_watch_cache_(window_events|watchers)\{' | grep -v ' 0$' | sort
if [[ -n $STORE_EPS ]]; then
  echo "== store members: revision raft_index db_size_mb db_in_use_mb"
  IFS=, read -ra eps <<<"$STORE_EPS"
  for e in "${eps[@]}"; do
    curl -s -X POST "$e/v3/maintenance/status" -d '{}' | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["header"]["revision"], d["raftIndex"], int(d["dbSize"]) >> 20, int(d["dbSizeInUse"]) >> 20)'
  done
fi
