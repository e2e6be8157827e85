#!/usr/bin/env bash
# Session 14 call 8: the batch-stride fixes (CLI --batch packs by default; sm90 keeps an explicit 0 = broadcast and
# refuses broadcast A / B, takes a broadcast C): the whole GPU test suite (with the new Sm90Gpu.BroadcastC), the
# random-problem sweep again (its batched problems were all refused by the CLI in call 7), and broadcast problems
# through the tuner.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 400 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills|BroadcastC" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
S=bench/results/2026-11-21-s14/scripts
python3 $S/sweep.py build-lead/gemmtune $O/sweep14 36 14 > $O/sweep14.txt; tail -1 $O/sweep14.txt
python3 $S/sweep.py build-lead/gemmtune $O/sweep15 36 15 > $O/sweep15.txt; tail -1 $O/sweep15.txt
grep -E "batch|BAD|FLAG" $O/sweep14.txt $O/sweep15.txt | head -40
tar czf $O/sweep_logs.tgz -C $O sweep14 sweep15 && rm -rf $O/sweep14 $O/sweep15
T="--backends sm90,cublaslt --top-k 2 --min-time-ms 2 --min-iters 3 --settle-ms 0 --no-cache"
for extra in "--batch-stride-b 0" "--batch-stride-a 0" "--batch-stride-c 0 --beta 0.5" "--beta 0.5"; do
  echo "#### tune --m 300 --n 264 --k 200 --batch 3 $extra"
  build-lead/gemmtune tune --m 300 --n 264 --k 200 --batch 3 $extra $T 2>&1 | grep -v "^  \|^compil" | tail -8
done
