#!/usr/bin/env bash
# The GPU-host run: build (or reuse a carried build), GPU tests, one tune (cold, then warm from the result cache in a
# new process), the benchmark suites side by side with cuBLASLt, and a SASS check of a dumped sm90 cubin.
#
#   bench/gpu_run.sh OUTDIR [BUILD_DIR]
#
# Environment:
#   SUITES        suites under bench/suites to run (default "llama3_8b llama3_70b squares"; "" = none); e.g.
#                 "unaligned unaligned_padded": the unaligned problems and their aligned twins, in one run so that
#                 `torch_baseline.py --report ... --twin-json OUTDIR/bench_unaligned_padded.json` can pair them
#   TUNE_SHAPE    problem of the tune example (default "--m 4096 --n 4096 --k 4096")
#   BENCH_ARGS    extra arguments for `gemmtune bench` (e.g. "--top-k 4 --in-process")
#   STEP_TIMEOUT  seconds per step (default 900)
#   CUBLAS_SUITES     suites also benched with --backends cublaslt (tuned cuBLASLt vs its default; default none)
#   SANITIZE          set: compute-sanitizer memcheck + racecheck on one coop and one ping-pong config
#   GPU_RUN_NO_BUILD  set: use a carried BUILD_DIR as it is, even when it was configured at this path
#   GPU_TEST_FILTERS  gtest filter groups run one after another with a carried build (default "*")
#   GPU_TEST_TIMEOUT  seconds per filter group (default STEP_TIMEOUT)
# Everything lands in OUTDIR: logs, JSON/CSV, the result + kernel cache (cache/), dumped kernels (dump/).
# Steps go on after a failure; the summary at the end lists what failed. Exit status: 2 when nothing could be
# built, 1 when GPU tests failed, else 0 (other failures are in the summary).
set -u

if [[ $# -lt 1 ]]; then
  echo "usage: $0 OUTDIR [BUILD_DIR]" >&2
  exit 2
fi
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${2:-}
SUITES=${SUITES-llama3_8b llama3_70b squares}
TUNE_SHAPE=${TUNE_SHAPE:---m 4096 --n 4096 --k 4096}
BENCH_ARGS=${BENCH_ARGS:-}
STEP_TIMEOUT=${STEP_TIMEOUT:-900}

export GEMMTUNE_CACHE_DIR="$OUT/cache"
export GEMMTUNE_DUMP_DIR="$OUT/dump"
mkdir -p "$GEMMTUNE_CACHE_DIR" "$GEMMTUNE_DUMP_DIR"

FAILURES=()
SUMMARY=()
fail() { FAILURES+=("$1"); echo "FAIL: $1" >&2; }
say() { SUMMARY+=("$1"); }
step() { echo; echo "=== $* ==="; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# ---- build ------------------------------------------------------------------------------------------------------
step "build"
build_ok=0
if [[ -n "$BUILD" && -x "$BUILD/gemmtune" ]]; then
  BUILD=$(cd "$BUILD" && pwd)
  # A build carried from another machine may have been configured at another path: rebuild only when it was
  # configured here, otherwise use its binaries as they are.
  cached_dir=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
  if [[ "$cached_dir" == "$BUILD" ]] && command -v ninja >/dev/null && [[ -z "${GPU_RUN_NO_BUILD:-}" ]]; then
    timeout "$STEP_TIMEOUT" cmake --build "$BUILD" >"$OUT/build.log" 2>&1 || fail "incremental build (see build.log)"
  else
    echo "using carried build in $BUILD as is (configured at ${cached_dir:-unknown})"
  fi
  build_ok=1
else
  BUILD=${BUILD:-$ROOT/build-gpu}
  echo "configuring $BUILD"
  if timeout "$STEP_TIMEOUT" cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
    timeout "$STEP_TIMEOUT" cmake --build "$BUILD" >>"$OUT/build.log" 2>&1; then
    build_ok=1
  else
    fail "build (tail of build.log below)"
    tail -30 "$OUT/build.log"
  fi
fi
GT="$BUILD/gemmtune"
if [[ ! -x "$GT" ]]; then
  fail "no gemmtune binary in $BUILD"
  build_ok=0
fi
# Binaries carried from another path find libgemmtune next to them.
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "build:      $([[ $build_ok == 1 ]] && echo ok || echo FAILED) ($BUILD)"

# ---- GPU ---------------------------------------------------------------------------------------------------------
step "GPU"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv | tee "$OUT/nvidia-smi.csv"
  say "gpu:        $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | head -1)"
else
  fail "nvidia-smi not found"
fi
[[ $build_ok == 1 ]] && "$GT" version | tee "$OUT/version.txt"

if [[ $build_ok != 1 ]]; then
  echo
  echo "=== summary ==="
  printf '%s\n' "${SUMMARY[@]}"
  printf 'FAIL: %s\n' "${FAILURES[@]}"
  exit 2
fi

# ---- GPU tests ---------------------------------------------------------------------------------------------------
step "GPU tests (ctest -L gpu)"
tests_rc=0
cached_dir=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
if [[ "$cached_dir" == "$BUILD" && -z "${GPU_TEST_FILTERS:-}" ]]; then
  timeout "$STEP_TIMEOUT" ctest --test-dir "$BUILD" -L gpu --output-on-failure >"$OUT/gpu_tests.log" 2>&1
  tests_rc=$?
elif [[ -x "$BUILD/tests/gemmtune_gpu_tests" ]]; then
  # ctest files name the configure-time paths; run the test binary directly instead, one gtest filter group at a
  # time (GPU_TEST_FILTERS, space-separated) so that one hanging group cannot eat the others' time.
  : >"$OUT/gpu_tests.log"
  for f in ${GPU_TEST_FILTERS:-*}; do
    echo "--- gtest_filter=$f" >>"$OUT/gpu_tests.log"
    timeout "${GPU_TEST_TIMEOUT:-$STEP_TIMEOUT}" "$BUILD/tests/gemmtune_gpu_tests" --gtest_filter="$f" \
      >>"$OUT/gpu_tests.log" 2>&1
    rc=$?
    [[ $rc != 0 ]] && tests_rc=$rc && echo "--- gtest_filter=$f exited $rc" >>"$OUT/gpu_tests.log"
  done
else
  echo "no GPU tests found" >"$OUT/gpu_tests.log"
  tests_rc=1
fi
tail -15 "$OUT/gpu_tests.log"
if [[ $tests_rc != 0 ]]; then
  fail "GPU tests (rc=$tests_rc, see gpu_tests.log)"
  say "gpu tests:  FAILED (rc=$tests_rc)"
else
  say "gpu tests:  passed ($(grep -Eo '[0-9]+% tests passed.*|\[  PASSED  \].*' "$OUT/gpu_tests.log" | tail -1))"
fi

# ---- tune: cold, then warm in a new process ------------------------------------------------------------------------
step "tune $TUNE_SHAPE (cold)"
t0=$(now)
# shellcheck disable=SC2086
timeout "$STEP_TIMEOUT" "$GT" tune $TUNE_SHAPE --force --json "$OUT/tune.json" >"$OUT/tune.txt" 2>"$OUT/tune.log"
rc=$?
t1=$(now)
cat "$OUT/tune.txt"
if [[ $rc != 0 ]]; then
  fail "tune (rc=$rc, see tune.log)"
  tail -5 "$OUT/tune.log"
fi
say "tune cold:  $(elapsed "$t0" "$t1") s wall | $(grep '^winner:' "$OUT/tune.txt" || echo 'no winner')"

step "tune $TUNE_SHAPE (again, new process: result cache)"
t0=$(now)
# shellcheck disable=SC2086
timeout "$STEP_TIMEOUT" "$GT" tune $TUNE_SHAPE --json "$OUT/tune_cached.json" >"$OUT/tune_cached.txt" \
  2>"$OUT/tune_cached.log"
rc=$?
t1=$(now)
cat "$OUT/tune_cached.txt"
[[ $rc != 0 ]] && fail "cached tune (rc=$rc, see tune_cached.log)"
grep -q '| cache hit |' "$OUT/tune_cached.txt" || fail "second tune was not a result-cache hit"
say "tune warm:  $(elapsed "$t0" "$t1") s wall (process start to exit) | $(grep -o 'cache [a-z]*' "$OUT/tune_cached.txt" | head -1)"

# ---- bench suites --------------------------------------------------------------------------------------------------
for s in $SUITES; do
  step "bench $s"
  suite="$ROOT/bench/suites/$s.json"
  if [[ ! -f "$suite" ]]; then
    fail "suite $s: $suite not found"
    continue
  fi
  # shellcheck disable=SC2086
  timeout "$STEP_TIMEOUT" "$GT" bench --suite "$suite" --json "$OUT/bench_$s.json" --csv "$OUT/bench_$s.csv" \
    $BENCH_ARGS >"$OUT/bench_$s.txt" 2>"$OUT/bench_$s.log"
  rc=$?
  cat "$OUT/bench_$s.txt"
  [[ $rc != 0 ]] && fail "bench $s (rc=$rc, see bench_$s.log)" && tail -5 "$OUT/bench_$s.log"
  say "bench $s: $(grep '^geomean' "$OUT/bench_$s.txt" || echo 'no result')"
done

# ---- cuBLASLt-only tuning vs cuBLASLt's default ---------------------------------------------------------------------
for s in ${CUBLAS_SUITES:-}; do
  step "bench $s (--backends cublaslt)"
  suite="$ROOT/bench/suites/$s.json"
  # shellcheck disable=SC2086
  timeout "$STEP_TIMEOUT" "$GT" bench --suite "$suite" --backends cublaslt --json "$OUT/bench_${s}_cublaslt.json" \
    --csv "$OUT/bench_${s}_cublaslt.csv" $BENCH_ARGS >"$OUT/bench_${s}_cublaslt.txt" 2>"$OUT/bench_${s}_cublaslt.log"
  rc=$?
  cat "$OUT/bench_${s}_cublaslt.txt"
  [[ $rc != 0 ]] && fail "bench $s cublaslt (rc=$rc)" && tail -5 "$OUT/bench_${s}_cublaslt.log"
  say "bench $s cublaslt-only: $(grep '^geomean' "$OUT/bench_${s}_cublaslt.txt" || echo 'no result')"
done

# ---- compute-sanitizer on one config of each schedule -----------------------------------------------------------------
if [[ -n "${SANITIZE:-}" ]]; then
  step "compute-sanitizer"
  out=$("$ROOT/tools/dev/sanitize_sm90.sh" "$OUT/sanitize.log" "$GT" "$STEP_TIMEOUT" \
    "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8" \
    "tile=128x128x64,stages=4,cluster=1x2,sched=pingpong,raster=m,group=8") || fail "compute-sanitizer (see sanitize.log)"
  echo "$out"
  while IFS= read -r line; do say "sanitize:   $line"; done <<<"$out"
fi

# ---- SASS of an sm90 kernel ----------------------------------------------------------------------------------------
step "SASS"
# A fresh compile of the top sm90 candidate guarantees a dumped cubin even when tuning hit the kernel cache.
# shellcheck disable=SC2086
"$GT" compile $TUNE_SHAPE --top-k 1 --no-cache -q >"$OUT/compile.txt" 2>&1 || fail "compile (see compile.txt)"
cat "$OUT/compile.txt"
cubin=$(ls -t "$GEMMTUNE_DUMP_DIR"/*.cubin 2>/dev/null | head -1)
if [[ -z "$cubin" ]]; then
  fail "no cubin dumped in $GEMMTUNE_DUMP_DIR"
elif ! command -v cuobjdump >/dev/null && [[ ! -x /usr/local/cuda/bin/cuobjdump ]]; then
  fail "cuobjdump not found"
else
  CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  "$CUOBJDUMP" --dump-sass "$cubin" >"$OUT/kernel.sass" 2>&1 || fail "cuobjdump on $cubin"
  hgmma=$(grep -c 'HGMMA' "$OUT/kernel.sass")
  ldl=$(grep -c 'LDL' "$OUT/kernel.sass")
  stl=$(grep -c 'STL' "$OUT/kernel.sass")
  echo "$(basename "$cubin"): HGMMA=$hgmma LDL=$ldl STL=$stl"
  say "sass:       $(basename "$cubin"): HGMMA=$hgmma LDL=$ldl STL=$stl"
  [[ $hgmma == 0 ]] && fail "no HGMMA in $(basename "$cubin")"
  [[ $ldl != 0 || $stl != 0 ]] && fail "local memory traffic (LDL=$ldl STL=$stl) in $(basename "$cubin")"
fi

# ---- summary -------------------------------------------------------------------------------------------------------
echo
echo "=== summary ($OUT) ==="
printf '%s\n' "${SUMMARY[@]}"
if [[ ${#FAILURES[@]} -gt 0 ]]; then
  printf 'FAIL: %s\n' "${FAILURES[@]}"
else
  echo "no failures"
fi
[[ $tests_rc != 0 ]] && exit 1
exit 0
