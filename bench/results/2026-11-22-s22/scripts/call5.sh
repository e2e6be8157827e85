#!/usr/bin/env bash
# Session 22 device call 5: mma=1 with a cp.async ring (ring=4/8). 1) GemvGpu.* 2) whole gemv lists (one process
# each) at M = 4-16 3) ncu on ring configs 4) the decode suite.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead
timeout 240 build-lead/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -30
for s in 16,4096,14336 8,4096,14336 4,4096,14336 16,4096,4096 8,28672,4096 2,4096,14336; do
  IFS=, read -r m n k <<<"$s"
  L=$O/all_${m}_${n}_${k}.log
  timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --backends gemv --top-k 0 --min-time-ms 30 --no-cache \
    < /dev/null > $L.out 2> $L
  echo "== gemv ${m}x${n}x${k} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
  grep -E "^\s+gemv:" $L | sort -t' ' -k2 | awk '{print $1, $2}' | sort -k2 -n | head -5 | sed 's/^/     /'
done
L=$O/all_glu.log
timeout 60 build-lead/gemmtune tune --m 16 --n 28672 --k 4096 --epilogue silu_glu --backends gemv --top-k 0 \
  --min-time-ms 30 --no-cache < /dev/null > $L.out 2> $L
echo "== gemv 16x28672x4096 silu_glu rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
MET="dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum"
for cfg in "vec=m,warps=4,rows=16,ksplit=2,unroll=1,mma=1,ring=8" "vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=8" "vec=m,warps=4,rows=16,ksplit=4,unroll=1,mma=1,ring=4"; do
  NOFLUSH=1 SLOTS=1 ROUNDS=20 timeout 120 ncu --metrics $MET --launch-skip 40 --launch-count 1 -k regex:gt_gemv \
    build-lead/timing_probe 16 4096 14336 "3" "gemv:$cfg" > $O/ncu_ring.txt 2>&1
  echo "== ncu $cfg"; grep -E "^\s+(dram|lts|gpu__time|sm__warps|launch__|smsp)" $O/ncu_ring.txt | awk '{print "   ",$1,$(NF-1),$NF}'
done
timeout 200 build-lead/gemmtune bench --suite bench/suites/decode.json --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; cut -c1-175 $O/decode.txt
tar czf $O/logs.tgz -C $O $(cd $O && ls all_*) && (cd $O && rm -f all_*)
gzip -f $O/tests.log $O/decode.log
