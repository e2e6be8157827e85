#!/usr/bin/env bash
# session-9 device call 4: final build (runoff band from the 4th fastest, winner picked among the raced): every GPU
# test, the 4096^3 tail twins the estimate ranks first (128x160, r / C = 0.3) against the plain walk, and the suites.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 270 $B/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "Which is|FAILED" $O/gpu_tests.log | head -20
P160="tile=128x160x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=6"
G160="tile=128x160x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
G128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab1 $B "4096,4096,4096" cublaslt:default "$G128" "$P160" "$P160,tail=sk" "$G160" "$G160,tail=sk"
timeout 200 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json > $O/bench_large.txt 2> $O/bench_large.log
echo "large rc=$?"; cat $O/bench_large.txt
timeout 150 $B/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/bench_llama3_8b.json > $O/bench_llama3_8b.txt 2> $O/bench_llama3_8b.log
echo "llama rc=$?"; tail -12 $O/bench_llama3_8b.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
gzip -f $O/*.log
