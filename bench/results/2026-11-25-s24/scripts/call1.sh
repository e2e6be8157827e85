#!/usr/bin/env bash
# Session 24 device call 1: HEAD (4ce2dee). 1) GPU tests GemvGpu, TunerGpu, EpilogueGpu (the last review mend touched
# the gemv csplit sizes) 2) the new layouts suite (training backward layouts, other layouts, f16, f32 D, col D, batches)
# with every backend and with sm90 alone: how gemmtune does on problems the inference suites leave out.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 240 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.*:TunerGpu.*:EpilogueGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "ms total|^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_l timeout 170 build-lead/gemmtune bench --suite bench/suites/layouts.json \
  --json $O/layouts.json > $O/layouts.txt 2> $O/layouts.log
echo "== layouts rc=$?"; cut -c1-200 $O/layouts.txt
GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 140 build-lead/gemmtune bench --suite bench/suites/layouts.json --backends sm90 \
  --json $O/layouts_sm90.json > $O/layouts_sm90.txt 2> $O/layouts_sm90.log
echo "== layouts sm90 alone rc=$?"; cut -c1-200 $O/layouts_sm90.txt
gzip -f $O/tests.log $O/layouts.log $O/layouts_sm90.log
