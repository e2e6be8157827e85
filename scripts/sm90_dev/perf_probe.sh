#!/usr/bin/env bash
# GPU-host probe for the sm90 perf pass: GPU tests, a full sm90 sweep of one shape (every candidate timed), grid sizes.
#   scripts/sm90_dev/perf_probe.sh OUTDIR BUILD_DIR
# env: SHAPES ("m,n,k ..."), TEST_FILTER, TEST_TIMEOUT, SKIP_TESTS, SWEEP_TIMEOUT, TOPK, ROWS, BACKENDS,
#      SANITIZE_CFGS (sm90 configs run under compute-sanitizer memcheck + racecheck), SUITE, SUITE_TIMEOUT, BENCH_ARGS
set -u
OUT=$1; B=$2; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GEMMTUNE_CACHE_DIR=/tmp/gtcache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader | tee "$OUT/smi.txt"
if [[ -z "${SKIP_TESTS:-}" ]]; then
  timeout "${TEST_TIMEOUT:-100}" "$B/tests/gemmtune_gpu_tests" --gtest_filter="${TEST_FILTER:-Sm90Gpu.*}" >"$OUT/tests.log" 2>&1
  echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED|Failure|rc=" "$OUT/tests.log" | head -20
fi
# shellcheck disable=SC2086
[[ -n "${SANITIZE_CFGS:-}" ]] && "$(dirname "$0")/../sanitize_sm90.sh" "$OUT/sanitize.log" "$B/gemmtune" 120 $SANITIZE_CFGS
i=0
for s in ${SHAPES:-4096,4096,4096}; do
  IFS=, read -r m n k <<<"$s"; i=$((i+1))
  GEMMTUNE_SM90_VERBOSE=1 timeout "${SWEEP_TIMEOUT:-90}" "$B/gemmtune" tune --m "$m" --n "$n" --k "$k" --backends "${BACKENDS:-sm90}" \
    --top-k "${TOPK:-200}" --no-cache --force --min-time-ms 30 --min-iters 30 >"$OUT/sweep_${m}x${n}x${k}.txt" 2>"$OUT/sweep_${m}x${n}x${k}.log"
  echo "sweep $s rc=$?"; grep -E "grid" "$OUT/sweep_${m}x${n}x${k}.log" | sort -u | head -6
  cut -c1-100,108-130 "$OUT/sweep_${m}x${n}x${k}.txt" | head -${ROWS:-40}
done
if [[ -n "${SUITE:-}" ]]; then
  timeout "${SUITE_TIMEOUT:-200}" "$B/gemmtune" bench --suite "bench/suites/$SUITE.json" --json "$OUT/bench_$SUITE.json" \
    ${BENCH_ARGS:-} >"$OUT/bench_$SUITE.txt" 2>"$OUT/bench_$SUITE.log"
  echo "bench $SUITE rc=$?"; cut -c1-150 "$OUT/bench_$SUITE.txt"
fi
