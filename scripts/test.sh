#!/usr/bin/env bash
# Installs dependencies (Debian packages), builds everything and runs every
# test, then runs the clang job (scripts/clang-checks.sh). Extra arguments go
# to the first ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so a fresh clone anywhere
# hits the cache that another clone filled.
export CCACHE_BASEDIR="$PWD"
scripts/install-deps.sh
# Debian's kubectl 1.20, unpacked by install-deps.sh, for the kubectl suites'
# oldest client (a path given by the caller wins).
kubectl_120="${KPLANE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kplane}/kubectl-1.20/usr/bin/kubectl"
if [ -z "${KPLANE_KUBECTL_1_20:-}" ] && [ -x "$kubectl_120" ]; then
  export KPLANE_KUBECTL_1_20="$kubectl_120"
fi
# A build of its own, at -O1 without debug info: it compiles about 35 %
# faster than the RelWithDebInfo build in build/ (what `kplane up` and the
# benchmarks use), which keeps the whole run well inside CI's budget on two
# cores. NDEBUG as in the other builds, so the same checks run.
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG"
cmake --build build-test
ctest --test-dir build-test --output-on-failure -j2 "$@"
# Then the clang job: thread-safety analysis over every file, and the unit
# and chosen integration tests under ASan + UBSan (docs/testing.md).
# KPLANE_SKIP_CLANG_JOB=1 skips it (for a quick `scripts/test.sh -L unit`).
if [ "${KPLANE_SKIP_CLANG_JOB:-0}" != 1 ]; then
  scripts/clang-checks.sh
fi
