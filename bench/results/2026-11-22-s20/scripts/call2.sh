#!/usr/bin/env bash
# Session 20 device call 2: call 1's parts 2 and 4 again (call 1 passed the sm90 configs without "tile=", refused):
# the session-19 build (build-base) and this one alternated (base, new, base, new): plain and split at the same tiles
# with cuBLASLt's default, side by side, at skinny problems; ncu of the split 64x128, the plain 64x256 and cuBLASLt's
# default at 16x4096x14336 (new build).
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc
C=()
for t in "tile=64x128x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc" \
         "tile=64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=n,group=6" \
         "tile=64x64x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc" \
         "tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc"; do
  C+=("$t" "$t,tail=sk")
done
C+=("cublaslt:default")
P="16,4096,14336 1,4096,14336 32,4096,14336 48,4096,14336 16,4096,4096 16,6144,4096 16,4096,8192 64,8192,8192"
for rep in 1 2; do
  for B in build-base build-lead; do
    echo "#### $B rep $rep"
    scripts/sm90_dev/ab_configs.sh $O/ab_${B}_$rep $B "$P" "${C[@]}" 2>&1 | cut -c1-110
  done
done
scripts/sm90_dev/ncu_probe.sh $O/ncu build-lead "16 4096 14336" \
  "tile=64x128x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc,tail=sk" \
  "tile=64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=n,group=6" "cublaslt:default" 2>&1 | \
  grep -E "^==|Duration|SM Frequency|dram__bytes_read|lts__t_bytes|Memory Throughput|DRAM Throughput|inst_executed.sum"
tar czf $O/logs.tgz -C $O $(cd $O && ls -d ab_* ncu) && (cd $O && rm -rf ab_* ncu)
