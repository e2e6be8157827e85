#!/usr/bin/env bash
# Session 18 device call 6: 1) 128x144 2x1 at its deepest ring (6 stages) leaves room for 8-row warp pieces only:
# is a fifth stage with 16-row pieces better? 2) Cooperative tiles with 16-row sector-aligned warp pieces against
# their warpgroup strips (session 16 measured 8-row 176-byte pieces 1.5-10% slower there). Side by side per problem.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
T=(--config "sm90:tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=8"
   --config "sm90:tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp"
   --config "sm90:tile=128x144x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp"
   --config "sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"
   --config "sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8,epi=warp"
   --config "sm90:tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8"
   --config "sm90:tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8,epi=warp"
   --config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp"
   --config "cublaslt:algo=66,tile=144x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0")
for p in "4096 8192 512" "8192 6144 512" "4096 8192 1024" "4096 8192 4096" "2048 4096 14336" "8192 8192 8192" \
         "4096 8192 512" "8192 6144 512"; do
  set -- $p
  L=$O/ab_${1}_${2}_${3}.log
  [ -e $L ] && L=$O/ab_${1}_${2}_${3}_2.log
  timeout 120 build-lead/gemmtune tune --m $1 --n $2 --k $3 "${T[@]}" --no-cache < /dev/null > /dev/null 2> $L
  echo "== ${1}x${2}x${3} rc=$?"
  grep -A10 'side by side' $L | grep ' us ' | sed 's/sm90:tile=//; s/,raster=m,group=8//; s/,stages=64xAUTO.*//' | awk '{print "   ", $1, $2}'
done
tar czf $O/logs.tgz -C $O $(cd $O && ls ab_*) && (cd $O && rm -f ab_*)
