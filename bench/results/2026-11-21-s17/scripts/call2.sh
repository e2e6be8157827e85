#!/usr/bin/env bash
# Session 17 device call 2: why every 128-row ping-pong tile ran 20-25% behind the coop 256-row tiles at 6000x6000x1000
# (call 1). Hypothesis: A's and B's rows are 2000 bytes apart, not a multiple of 32, so every other 128-byte TMA row
# read touches 5 L2 sectors instead of 4 and the 128-row tiles, which read the most operand bytes per MMA, are
# L2-bound. Same configs side by side at the same problem with K = 1000 / 1024 and padded leading dimensions.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
CFG=(--config "sm90:tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7"
     --config "sm90:tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,group=7"
     --config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp"
     --config "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
     --config "sm90:tile=256x192x64,stages=3,cluster=1x2,sched=coop,raster=m,group=10"
     --config "sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"
     --config "cublaslt:algo=66,tile=256x160,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=7,cluster=1x2x1,inner=0"
     --config "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0")
while read -r tag m n k extra; do
  [ -z "$tag" ] && continue
  timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k $extra "${CFG[@]}" --no-cache < /dev/null > $O/$tag.txt 2> $O/$tag.log
  echo "== $tag ${m}x${n}x${k} $extra rc=$?"
  grep -A12 "side by side" $O/$tag.log | grep " us " | sed 's/^ *//' | awk '{printf "%-100s %s\n", substr($1,1,100), $2}'
done <<'LIST'
k1000 6000 6000 1000
k1024 6000 6000 1024
ld1008 6000 6000 1000 --lda 1008 --ldb 1008
ld1024 6000 6000 1000 --lda 1024 --ldb 1024
sq1000 6144 6144 1000
sq1024 6144 6144 1024
k1000b 6000 6000 1000
LIST
tar czf $O/logs.tgz -C $O $(cd $O && ls *.log *.txt | grep -v console) && (cd $O && rm -f k*.log k*.txt ld*.log ld*.txt sq*.log sq*.txt)
