#!/usr/bin/env bash
# Session 18 device call 10: the tiles the epi=warp rule reaches by extrapolation (128x112, 128x96, 128x80 ping-pong
# 2x1), each with warp pieces at its 16-row ring against the warpgroup strips at its deepest ring (and at the same
# ring), side by side per problem.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
T=()
for t in "128x112x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8" \
         "128x96x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8" \
         "128x80x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8"; do
  T+=(--config "sm90:tile=$t" --config "sm90:tile=$t,epi=warp")
done
T+=(--config "sm90:tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8"
    --config "sm90:tile=128x96x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8")
for p in "4096 4096 512" "4096 4096 4096" "8192 4096 1024" "2048 8192 4096" "4096 4096 512"; do
  set -- $p
  L=$O/ab_${1}_${2}_${3}.log
  [ -e $L ] && L=$O/ab_${1}_${2}_${3}_2.log
  timeout 120 build-lead/gemmtune tune --m $1 --n $2 --k $3 "${T[@]}" --no-cache < /dev/null > /dev/null 2> $L
  echo "== ${1}x${2}x${3} rc=$?"
  grep -A9 'side by side' $L | grep ' us ' | sed 's/sm90:tile=//; s/,cluster=2x1,sched=pingpong,raster=n,group=8//' | awk '{print "   ", $1, $2}'
done
tar czf $O/logs.tgz -C $O $(cd $O && ls ab_*) && (cd $O && rm -f ab_*)
