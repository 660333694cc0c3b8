#!/usr/bin/env bash
# Soaks the raft core in the seeded cluster simulation: many seeds, longer
# runs, 3- and 5-node clusters, two worker processes (this machine has 2
# cores). Every failure prints its replay command; the script exits 1 if
# any seed failed.
#
#   scripts/raft-soak.sh [SEEDS] [STEPS] [FIRST_SEED]
#   scripts/raft-soak.sh 5000 20000        # ~5000 seeds per size, 20k steps
#
# Defaults: 2000 seeds per cluster size, 10000 steps, starting at seed 1000
# (the CI test covers seeds 1..500 at 4000 steps).
set -euo pipefail
cd "$(dirname "$0")/.."

SEEDS=${1:-2000}
STEPS=${2:-10000}
FIRST=${3:-1000}
BUILD=${BUILD:-build}

if [[ ! -x "$BUILD/tests/sim/raft_sim" ]]; then
  cmake -S . -B "$BUILD" -G Ninja >/dev/null
  cmake --build "$BUILD" -j2 --target raft_sim
fi

log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
status=0
for nodes in 3 5; do
  half=$(( (SEEDS + 1) / 2 ))
  "$BUILD/tests/sim/raft_sim" --nodes="$nodes" --steps="$STEPS" \
      --seed="$FIRST" --seeds="$half" >"$log_dir/$nodes-a.log" &
  pa=$!
  "$BUILD/tests/sim/raft_sim" --nodes="$nodes" --steps="$STEPS" \
      --seed=$((FIRST + half)) --seeds=$((SEEDS - half)) >"$log_dir/$nodes-b.log" &
  pb=$!
  wait "$pa" || status=1
  wait "$pb" || status=1
  for f in "$log_dir/$nodes-a.log" "$log_dir/$nodes-b.log"; do
    grep -E '^(FAIL|replay)' "$f" || true
    echo "nodes=$nodes $(tail -n 1 "$f")"
  done
done
exit $status
