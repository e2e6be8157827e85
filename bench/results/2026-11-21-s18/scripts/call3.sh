#!/usr/bin/env bash
# Session 18 device call 3 (build: sector-aligned warp strips, 16-row pieces where 32 KB fit, else 8). 1) The warp
# strip tests, then every GPU test. 2) Which ping-pong tiles gain from epi=warp now: each tile with and without it,
# side by side in one process (2x1, raster m, group 8), at short, mid and long K.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
T=()
for t in "128x192x64,stages=4" "128x160x64,stages=5" "128x128x64,stages=6" "128x168x64,stages=5" \
         "128x176x64,stages=5" "128x144x64,stages=6"; do
  T+=(--config "sm90:tile=$t,cluster=2x1,sched=pingpong,raster=m,group=8"
      --config "sm90:tile=$t,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp")
done
for p in "8192 6144 512" "4096 8192 512" "8192 6144 1024" "4096 4096 4096" "8192 6144 4096" "8192 8192 8192" \
         "8192 6144 512" "4096 8192 512"; do
  set -- $p
  L=$O/ab_${1}_${2}_${3}.log
  [ -e $L ] && L=$O/ab_${1}_${2}_${3}_2.log
  timeout 120 build-lead/gemmtune tune --m $1 --n $2 --k $3 "${T[@]}" --no-cache < /dev/null > /dev/null 2> $L
  echo "== ${1}x${2}x${3} rc=$?"
  grep -A13 'side by side' $L | grep ' us ' | sed 's/sm90:tile=//; s/,cluster=2x1,sched=pingpong,raster=m,group=8//' | awk '{print "   ", $1, $2}'
done
timeout 420 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills" $O/gpu_tests.log | head -20
tar czf $O/logs.tgz -C $O $(cd $O && ls ab_*) && (cd $O && rm -f ab_*)
gzip -f $O/gpu_tests.log
