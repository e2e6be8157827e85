#!/usr/bin/env bash
# Builds gemmtune with clang under AddressSanitizer + UndefinedBehaviorSanitizer into ${FUZZ_BUILD_DIR:-build-fuzz},
# runs the CPU tests there (labels `unit` and `compile`; not `package`, which builds an uninstrumented consumer), then
# each libFuzzer target of tests/fuzz for FUZZ_SECONDS (default 40) from its seed corpus. Any sanitizer report or
# fuzzer crash fails the run (a test whose only failure is LeakSanitizer's own tracer dying after it passed runs once
# more, below); a crashing input is left in the build directory (crash-*).
# On the 2-core CI host: build ~13 min, tests ~4.5 min (the NVRTC compiles of `compile` dominate), fuzzers ~3 min.
#   scripts/fuzz.sh            build, CPU tests, fuzzers
#   scripts/fuzz.sh fuzz       build, fuzzers only
set -euo pipefail
cd "$(dirname "$0")/.."
B=${FUZZ_BUILD_DIR:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-40}
what=${1:-all}

scripts/setup.sh
# clang and its sanitizer/libFuzzer runtimes (Debian: clang, libclang-rt-dev), installed as scripts/setup.sh does.
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo=()
  if [ "$(id -u)" != 0 ]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y --no-install-recommends clang libclang-rt-dev ||
    { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y --no-install-recommends clang libclang-rt-dev; }
fi

if [ ! -f "$B/build.ninja" ] && [ ! -f "$B/Makefile" ]; then
  args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DGEMMTUNE_FUZZ=ON)
  if command -v ninja >/dev/null; then args+=(-G Ninja); fi
  if [ -d /usr/local/cuda ]; then args+=(-DCUDAToolkit_ROOT=/usr/local/cuda); fi
  cmake -S . -B "$B" "${args[@]}"
fi
cmake --build "$B" -j "$(nproc)"

# LeakSanitizer: NVRTC and cuBLASLt keep process-lifetime allocations that are not ours (tests/fuzz/lsan.supp).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0}
export GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-$(mktemp -d /tmp/gemmtune-fuzz-cache.XXXXXX)}

if [ "$what" = all ]; then
  if ! ctest --test-dir "$B" -LE 'gpu|sweep' -E '^package$' -j "$(nproc)" --output-on-failure; then
    # LeakSanitizer's own tracer thread sometimes dies at exit of a test that passed ("Tracer caught signal 11" after
    # gtest's PASSED, in the NVRTC compile tests: a fault in the sanitizer's stop-the-world, not a leak report). Such
    # tests, and only when every failure is that, run once more; anything else fails the run.
    log="$B/Testing/Temporary/LastTest.log"
    failed=$(sed 's/^[0-9]*://' "$B/Testing/Temporary/LastTestsFailed.log" 2>/dev/null || true)
    [ -n "$failed" ] || exit 1
    for t in $failed; do
      out=$(awk -v t="$t" '$2 == "Testing:" && $3 == t {on = 1} on {print} on && /^<end of output>$/ {exit}' "$log")
      if ! grep -q '^\[  PASSED  \] 1 test' <<<"$out" || ! grep -q '^Tracer caught signal' <<<"$out"; then
        echo "fuzz.sh: $t failed (not the LeakSanitizer tracer fault after a pass)"
        exit 1
      fi
    done
    echo "fuzz.sh: rerunning, once, the tests whose only failure was LeakSanitizer's tracer fault: $failed"
    ctest --test-dir "$B" --rerun-failed --output-on-failure
  fi
fi

for f in fuzz_epilogue fuzz_cli_problem fuzz_config fuzz_json fuzz_c_api; do
  seeds=tests/fuzz/corpus/${f#fuzz_}
  work=$(mktemp -d /tmp/gemmtune-$f.XXXXXX)  # new inputs go here, the committed seeds stay as they are
  echo "== $f: ${SECONDS_EACH}s from $seeds"
  # -close_fd_mask=2: the cache readers warn on stderr for every malformed input; libFuzzer's own report still prints.
  if ! (cd "$B" && "./tests/fuzz/$f" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
        -print_final_stats=1 -close_fd_mask=2 "$work" "$OLDPWD/$seeds"); then
    echo "$f failed; reproduce with: $B/tests/fuzz/$f $B/crash-<id> (see the report above)"
    exit 1
  fi
  rm -rf "$work"
done
