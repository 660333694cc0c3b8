#!/usr/bin/env bash
# Installs dependencies (Debian packages), builds everything and runs every
# test. Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# A build of its own, at -O1 without debug info: it compiles about 35 %
# faster than the RelWithDebInfo build in build/ (what `kplane up` and the
# benchmarks use), which keeps the whole run well inside CI's budget on two
# cores. NDEBUG as in the other builds, so the same checks run.
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG"
cmake --build build-test
ctest --test-dir build-test --output-on-failure -j2 "$@"
