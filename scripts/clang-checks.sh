#!/usr/bin/env bash
# The clang job of CI (docs/testing.md): builds everything with clang 14 in
# build-clang/ with the thread-safety analysis as an error and AddressSanitizer
# + UndefinedBehaviorSanitizer (undefined behaviour is fatal), proves that the
# analysis is active, then runs the unit tests and a chosen set of
# integration tests under the sanitizers. scripts/test.sh runs it after the
# GCC build and tests; extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

CXX_CLANG=${KPLANE_CLANG:-clang++-14}
if ! command -v "$CXX_CLANG" >/dev/null 2>&1; then
  echo "clang-checks: $CXX_CLANG not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

# -O1 as the GCC test build, but without NDEBUG: DCHECKs run, and
# _GLIBCXX_ASSERTIONS bounds-checks the standard containers (no ABI change).
cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$CXX_CLANG" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -D_GLIBCXX_ASSERTIONS" \
  -DKPLANE_CLANG_CHECKS=ON
cmake --build build-clang

# The analysis must bite: a translation unit that reads guarded data without
# its lock has to fail to compile with the flags above (and the same file
# with the lock taken has to compile, so the failure is the analysis's).
if ! cmake --build build-clang --target thread_safety_control >/dev/null; then
  echo "clang-checks: tests/compile_fail/thread_safety_violation.cc does not" \
       "compile even with the lock taken" >&2
  exit 1
fi
if out=$(cmake --build build-clang --target thread_safety_violation 2>&1); then
  echo "clang-checks: thread-safety analysis is not active:" \
       "tests/compile_fail/thread_safety_violation.cc compiled" >&2
  exit 1
fi
if ! grep -q -- '-Werror,-Wthread-safety' <<<"$out"; then
  echo "clang-checks: thread_safety_violation.cc failed, but not on the" \
       "thread-safety analysis:" >&2
  echo "$out" >&2
  exit 1
fi
echo "clang-checks: thread-safety analysis is active (the violation was rejected)"

# Sanitizer settings for every test process (and the processes they start).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

ctest --test-dir build-clang --output-on-failure -j2 -L unit "$@"
