#!/usr/bin/env bash
# Runs one libFuzzer target (fuzz/, docs/testing.md "Fuzzing") for a while.
#
#   scripts/fuzz.sh <target> [seconds] [extra libFuzzer flags...]
#   scripts/fuzz.sh yaml 600
#   scripts/fuzz.sh list                  # the targets
#
# Builds the target in build-fuzz/: clang 14 with ASan + UBSan as CI's
# build-clang/, plus -fsanitize=fuzzer-no-link on every library
# (KPLANE_FUZZ_COVERAGE), so the parsers' coverage guides libFuzzer. CI's
# tree only replays corpora and stays uninstrumented; build-fuzz shares its
# ccache but not its objects.
#
# Limits per input: 2 GiB of RSS, 64 KiB of input (-max_len), 10 s.
# New interesting inputs go to build-fuzz/corpus/<target>/ (a scratch dir;
# the checked-in seeds under fuzz/corpus/ and testdata/ are read, not
# written); crashers to build-fuzz/crashes/<target>/. With
# KPLANE_FUZZ_MERGE=1 the scratch inputs that add coverage are merged into
# fuzz/corpus/<target>/ instead of fuzzing (review before committing: keep
# the corpus small).
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD"

target=${1:-}
seconds=${2:-60}
shift $(( $# < 2 ? $# : 2 ))

if [ -z "$target" ]; then
  echo "usage: scripts/fuzz.sh <target>|list [seconds] [libFuzzer flags]" >&2
  exit 2
fi
if [ "$target" = list ]; then
  sed -n 's/^kplane_fuzz(\([a-z0-9_]*\).*/\1/p' fuzz/CMakeLists.txt
  exit 0
fi
if ! grep -q "^kplane_fuzz($target[ )]" fuzz/CMakeLists.txt; then
  echo "fuzz: no target '$target' (scripts/fuzz.sh list)" >&2
  exit 2
fi

CXX_CLANG=${KPLANE_CLANG:-clang++-14}
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$CXX_CLANG" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -D_GLIBCXX_ASSERTIONS" \
    -DKPLANE_CLANG_CHECKS=ON -DKPLANE_FUZZ_COVERAGE=ON
fi
cmake --build build-fuzz --target "${target}_fuzz"

bin=build-fuzz/fuzz/${target}_fuzz
mapfile -t seeds < "build-fuzz/fuzz/${target}.corpus"
scratch=build-fuzz/corpus/$target
crashes=build-fuzz/crashes/$target
mkdir -p "$scratch" "$crashes"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Files the targets write (wal, kubeconfig) go here.
export TMPDIR="$PWD/build-fuzz/tmp"
mkdir -p "$TMPDIR"

if [ "${KPLANE_FUZZ_MERGE:-0}" = 1 ]; then
  "$bin" -merge=1 -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    "fuzz/corpus/$target" "$scratch" "$@"
  echo "fuzz: merged into fuzz/corpus/$target; review with git status"
  exit 0
fi

before=$(find "$crashes" -type f | wc -l)
status=0
"$bin" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 -artifact_prefix="$crashes/" \
  "$@" "$scratch" "${seeds[@]}" || status=$?

found=$(find "$crashes" -type f | wc -l)
if [ "$status" -ne 0 ] || [ "$found" -gt "$before" ]; then
  cat <<MSG

fuzz: $target failed (exit $status); inputs in $crashes/:
$(ls -1 "$crashes")
To keep one as a regression input:
  1. replay it:  $bin $crashes/<file>
  2. fix the bug with a unit test beside the code that reproduces it;
  3. git add it as fuzz/corpus/$target/<what-it-is> (a descriptive name);
     ctest --test-dir build-clang -R fuzz_$target replays it from then on.
MSG
  exit 1
fi
echo "fuzz: $target ran ${seconds}s, no crash; new inputs in $scratch/"
echo "      (KPLANE_FUZZ_MERGE=1 scripts/fuzz.sh $target merges them into fuzz/corpus/$target)"
