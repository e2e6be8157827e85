#!/usr/bin/env bash
# Session 16 device call 3: the build with epi=warp enumerated for ping-pong configs of one warpgroup strip buffer.
# 1) every GPU test; 2) compute-sanitizer memcheck + racecheck on epi=warp configs (wide strips, 128-byte strips,
# the edge copy); 3) the large suite; 4) tune (default top-k, both backends) at short / mid K.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 340 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 120 scripts/sanitize_sm90.sh $O/sanitize.log build-lead/gemmtune 25 \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,epi=warp" \
  "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,epi=warp"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 25 $SAN --tool $tool --error-exitcode 9 build-lead/gemmtune tune \
    --config "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,epi=warp" --m 1000 --n 1090 --k 520 --ldd 1096 \
    --in-process --no-cache --min-iters 1 --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/san_edge_$tool.log 2>&1
  echo "$tool edge n=1090 ldd=1096 pp128x128 2x1 epi=warp: rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|error=|winner" $O/san_edge_$tool.log | tail -2 | tr '\n' ' ')"
done
gzip -f $O/sanitize.log $O/san_edge_*.log
GEMMTUNE_CACHE_DIR=/tmp/gtc_l1 timeout 250 build-lead/gemmtune bench --suite bench/suites/large.json --json $O/large.json > $O/large.txt 2>$O/large.log
echo "large rc=$?"; cut -c1-200 $O/large.txt; gzip -f $O/large.log
for s in "8192 6144 512" "4096 8192 512" "8192 6144 1024" "4096 14336 1024"; do
  read -r m n k <<<"$s"
  GEMMTUNE_CACHE_DIR=/tmp/gtc_k timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --backends sm90,cublaslt > $O/tune_${m}x${n}x${k}.txt 2>$O/tune_${m}x${n}x${k}.log
  echo "== tune $s rc=$?"; grep -A12 "runoff" $O/tune_${m}x${n}x${k}.log | head -12; tail -3 $O/tune_${m}x${n}x${k}.txt
done
tar czf $O/tunes.tgz $O/tune_* 2>/dev/null && rm -f $O/tune_*
