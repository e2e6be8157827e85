#!/usr/bin/env bash
# Session 25 device call 2: the 1-3-vector gemv ranking (the CUDA-core kernel's heads first, one per (ksplit, rows)
# family, at most 4 chunks in flight), fitted on call 1's survey and session 24's: a whole-list survey at 12 problems
# neither survey had (1-3 vectors, both orientations) to replay the new order against; the decode suite on it (its
# four M = 1 shapes); the gemv GPU tests whose configs are picked by list position.
set -u
O=$1
B=build
export LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,driver_version --format=csv
mkdir -p $O/survey
for shape in "1 6144 4096" "1 4096 14336" "1 10240 8192" "1 2048 2048" "2 2048 8192" "2 10240 8192" "3 4096 4096" \
             "3 14336 4096" "3 4096 14336" "3 28672 4096" "4096 2 4096" "14336 1 4096"; do
  [ $SECONDS -lt 200 ] || { echo "survey: stopped at $shape (time)"; break; }
  set -- $shape
  f=$O/survey/gemv_${1}x${2}x${3}
  GEMMTUNE_CACHE_DIR=/tmp/gtc_v timeout 45 $B/gemmtune tune --m $1 --n $2 --k $3 --backends gemv,cublaslt \
    --top-k 0 --no-cache --min-time-ms 30 --min-iters 50 --json $f.json > $f.txt 2> $f.log
  echo "$shape rc=$? $(grep -E '^winner' $f.txt | cut -c1-130)"
done
tar czf $O/survey.tgz -C $O survey && rm -rf $O/survey
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 150 $B/gemmtune bench --suite bench/suites/decode.json \
  --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode rc=$?"; cut -c1-170 $O/decode.txt
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 150 $B/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.ShapesLayoutsConfigs:GemvGpu.Chains' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs run|^\[  FAILED|Failure|Which is|threw|err=" $O/tests.log | head -20
gzip -f $O/tests.log $O/decode.log
