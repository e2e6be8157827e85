#!/usr/bin/env bash
# session-12 device call 3: one strip driver for both epilogues (put_strip) with one named barrier per strip when a
# consumer has two strip buffers (two barriers with one buffer, as before), the barrier id taken from the warpgroup
# (build-lead), against HEAD f5a4459 (build-head): the whole GPU test suite, memcheck + racecheck on a two-buffer and a
# one-buffer ping-pong, a two-buffer coop and an edge tile (direct copies), then side by side, builds alternating.
set -u
O=$1
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 320 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 100 scripts/sanitize_sm90.sh $O/sanitize.log build-lead/gemmtune 25 \
  "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8" \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8" \
  "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 25 $SAN --tool $tool --error-exitcode 9 build-lead/gemmtune tune \
    --config "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8" --m 1000 --n 1090 --k 520 --ldd 1096 \
    --in-process --no-cache --min-iters 1 --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/san_edge_$tool.log 2>&1
  echo "$tool edge n=1090 ldd=1096 pp128x128 2x1: rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|error=|winner" $O/san_edge_$tool.log | tail -2 | tr '\n' ' ')"
done
gzip -f $O/sanitize.log $O/san_edge_*.log
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB144="cublaslt:algo=66,tile=144x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
C176="tile=128x176x64,stages=5,cluster=2x1,sched=coop,raster=n,group=8,tiles=gpc"
P128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P192="tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P144="tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  for b in build-head build-lead; do
    export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b
    echo "#### rep $rep $b"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,6144,256 8192,6144,4096" "$CB176" "$P176" "$C176" "$P128" "$P192"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,8192,512 4096,4096,4096" "$CB144" "$CB128" "$P144" "$P128"
  done
done
for f in $O/ab_*/*.log; do gzip -f $f; done
