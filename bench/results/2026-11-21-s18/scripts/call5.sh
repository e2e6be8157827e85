#!/usr/bin/env bash
# Session 18 device call 5: the landed build (e0582e5) on problems no test lists, through every epi=warp strip form
# (sweep_warp.py, two seeds), then compute-sanitizer memcheck + racecheck on the new strip forms, one with the
# bounds-checked edge copy on a tail strip.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_w
S=bench/results/2026-11-21-s18/scripts
for seed in 181 182; do
  timeout 260 python3 $S/sweep_warp.py build-lead/gemmtune $O/sw$seed 30 $seed > $O/sweep_$seed.txt 2>&1
  echo "sweep seed $seed rc=$?"; grep -E "^p|FLAG|stderr" $O/sweep_$seed.txt | grep -v ' OK ' | head -20; tail -1 $O/sweep_$seed.txt
done
tar czf $O/sweep_logs.tgz -C $O sw181 sw182 && rm -rf $O/sw181 $O/sw182
bash scripts/sanitize_sm90.sh $O/san.log build-lead/gemmtune 90 \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp" \
  "tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6,epi=warp" \
  "tile=128x160x64,stages=5,cluster=1x1,sched=pingpong,raster=n,group=8,epi=warp" \
  "tile=128x208x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8,epi=warp"
echo "sanitize rc=$?"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  timeout 90 $SAN --tool $tool --error-exitcode 9 build-lead/gemmtune tune \
    --config "sm90:tile=64x176x64,stages=6,cluster=1x1,sched=pingpong,raster=n,group=8,epi=warp" \
    --m 1000 --n 1090 --k 520 --ldd 1096 --in-process --no-cache --min-iters 1 --min-time-ms 0 --warmup 1 \
    --settle-ms 0 < /dev/null > $O/san_edge_$tool.log 2>&1
  echo "$tool edge 1000x1090x520 ldd 1096 64x176 epi=warp: rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" $O/san_edge_$tool.log | tail -1)"
done
gzip -f $O/san.log $O/san_edge_*.log
