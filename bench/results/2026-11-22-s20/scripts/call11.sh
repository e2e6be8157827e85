#!/usr/bin/env bash
# Session 20 device call 11 (swap=1 with fused chains, lean plain swap units): the swap and epilogue GPU tests, the
# decode suite with three fused M = 16 shapes (cold caches), Inductor on it.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 300 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90Gpu.Swap:Sm90EpilogueGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 200 build-lead/gemmtune bench --suite bench/suites/decode.json \
  --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "decode rc=$?"; cut -c1-175 $O/decode.txt
timeout 240 python3 bench/torch_baseline.py --suite bench/suites/decode.json --json $O/torch_decode.json \
  --gemmtune-json $O/decode.json > $O/torch_decode.txt 2> $O/torch_decode.log
echo "torch decode rc=$?"; sed -n '/x inductor/,$p' $O/torch_decode.txt | cut -c1-175
gzip -f $O/tests.log $O/decode.log $O/torch_decode.log
