#!/usr/bin/env bash
# Session 17 device call 6: L2 promotion 256 vs 128 bytes (promo.patch, build-exp) over row pitches that are not a
# multiple of 128 bytes (pitch mod 128 = 16 ... 112), K-major and MN-major, short and long K, ping-pong and
# cooperative configs; cuBLASLt's default alongside as the anchor.
set -u
O=$1
export LD_LIBRARY_PATH=build-exp GEMMTUNE_CACHE_DIR=/tmp/gtc
CFG=(--config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp"
     --config "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
     --config "sm90:tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,group=7"
     --config "sm90:tile=128x192x64,stages=4,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc"
     --config "sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"
     --config "sm90:tile=256x192x64,stages=3,cluster=1x2,sched=coop,raster=m,group=10"
     --config "sm90:tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8"
     --config "cublaslt:default")
while read -r tag m n k extra; do
  [ -z "$tag" ] && continue
  [ $SECONDS -gt 420 ] && { echo "$tag skipped (time)"; continue; }
  for pr in 256 128; do
    GEMMTUNE_EXP_PROMO=$pr timeout 60 build-exp/gemmtune tune --m $m --n $n --k $k $extra "${CFG[@]}" --no-cache < /dev/null > $O/t_${tag}_$pr.txt 2> $O/t_${tag}_$pr.log
    echo "== $tag ${m}x${n}x${k} $extra promo=$pr rc=$?"
    grep -A10 "side by side" $O/t_${tag}_$pr.log | grep " us " | sed 's/^ *//' | awk '{printf "%-92s %s\n", substr($1,1,92), $2}'
  done
done <<'LIST'
k1032 4096 4096 1032
k1040 4096 4096 1040
k1056 4096 4096 1056
k1000 4096 4096 1000
k1008 4096 4096 1008
k4000 8192 8192 4000
k4104 8192 8192 4104
k2000 2048 8192 2000
mn6000 6000 6000 1024 --A bf16:col --B bf16:row
k1024 4096 4096 1024
LIST
tar czf $O/logs.tgz -C $O $(cd $O && ls t_*) && (cd $O && rm -f t_*)
