#!/usr/bin/env bash
# Session 20 device call 3: deeper rings for decode shapes (experiment build: stages up to 16 where shared memory
# allows; the session-19 space stopped at 7). Side by side with cuBLASLt's default, two repetitions.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc
G="cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc"
C=()
for s in 5 7 8; do C+=("tile=64x128x64,stages=$s,$G,tail=sk"); done
for s in 7 10 12; do C+=("tile=64x64x64,stages=$s,$G,tail=sk"); done
for s in 7 12; do C+=("tile=64x64x64,stages=$s,$G"); done
for s in 7 8; do C+=("tile=64x128x64,stages=$s,$G"); done
C+=("tile=64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=n,group=6" "cublaslt:default")
P="16,4096,14336 1,4096,14336 16,4096,4096 16,6144,4096 64,8192,8192 16,28672,4096 128,4096,14336"
for rep in 1 2; do
  echo "#### rep $rep"
  scripts/sm90_dev/ab_configs.sh $O/ab_$rep build-lead "$P" "${C[@]}" 2>&1 | cut -c1-110
done
tar czf $O/logs.tgz -C $O $(cd $O && ls -d ab_*) && (cd $O && rm -rf ab_*)
