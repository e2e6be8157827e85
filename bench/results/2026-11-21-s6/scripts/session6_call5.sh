#!/usr/bin/env bash
# session-6 device call 5: all GPU tests (upload fix, tile orders over repeated launches), compute-sanitizer on the
# dynamic order, then the large and llama3_8b suites with the session's build (serpentine band walk).
set -u
O=$1; B=build-x/new
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader > $O/smi.txt
timeout 300 $B/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "Which is|FAILED" $O/gpu_tests.log | head -20
timeout 200 scripts/sanitize_sm90.sh $O/sanitize.log $B/gemmtune 45 \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,tiles=dynamic" \
  "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4,tiles=dynamic"
echo "sanitize rc=$?"
timeout 200 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json > $O/bench_large.txt 2> $O/bench_large.log
echo "bench large rc=$?"; tail -25 $O/bench_large.txt
timeout 150 $B/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/bench_llama3_8b.json > $O/bench_llama3_8b.txt 2> $O/bench_llama3_8b.log
echo "bench llama rc=$?"; tail -5 $O/bench_llama3_8b.txt
cd $O && gzip -f sanitize.log && tar czf logs.tgz gpu_tests.log sanitize.log.gz bench_large.log bench_llama3_8b.log && rm -f gpu_tests.log sanitize.log.gz bench_large.log bench_llama3_8b.log
