#!/usr/bin/env bash
# Session 17 device call 10: is the short-K excess per tile or per launch? ncu (call 9) at base clock: ours 113.1k
# cycles against nvjet's 107.2k at 8192x6144x512 and 802.1k against 794.5k at K = 4096: the same tensor work, and an
# excess of the same size (5.9k / 7.6k cycles) at both K. Side by side at M = 1024 ... 16384 (2 to 34 tiles per SM):
# a constant gap in us means a per-launch cost, one growing with M a per-tile one.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
CFG=(--config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp"
     --config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,epi=warp"
     --config "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0")
for k in 512 4096; do
  for m in 1024 2048 4096 8192 16384; do
    [ $k = 4096 ] && [ $m = 16384 ] && continue
    timeout 60 build-lead/gemmtune tune --m $m --n 6144 --k $k "${CFG[@]}" --no-cache < /dev/null > $O/t_${m}_$k.txt 2> $O/t_${m}_$k.log
    echo "== ${m}x6144x$k rc=$? $(grep -A4 'side by side' $O/t_${m}_$k.log | grep ' us ' | awk '{printf "%s ", $2}')"
  done
done
tar czf $O/logs.tgz -C $O $(cd $O && ls t_*) && (cd $O && rm -f t_*)
