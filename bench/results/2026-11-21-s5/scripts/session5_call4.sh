#!/usr/bin/env bash
# session-5 device call 4: ncu of the new ping-pong 128x176 vs cuBLASLt's 176x128, then the large, llama3_8b and fused-epilogue suites.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv,noheader > $O/smi.txt
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
timeout 150 scripts/sm90_dev/ncu_probe.sh $O/ncu $B "8192 6144 4096" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7" "$CB176" >$O/ncu_summary.txt 2>&1
timeout 280 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json >$O/bench_large.txt 2>$O/bench_large.log
echo "bench large rc=$?"
timeout 150 $B/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/bench_llama3_8b.json >$O/bench_llama3_8b.txt 2>$O/bench_llama3_8b.log
echo "bench llama3_8b rc=$?"
timeout 150 $B/gemmtune bench --suite bench/suites/epilogue_llama8b.json --json $O/bench_epilogue.json >$O/bench_epilogue.txt 2>$O/bench_epilogue.log
echo "bench epilogue rc=$?"
cd $O && tar czf extra.tgz ncu *.log *.json && rm -rf ncu *.log *.json && ls
