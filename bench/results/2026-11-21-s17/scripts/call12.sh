#!/usr/bin/env bash
# Session 17 device call 12: memcheck on rows off the 128-byte lines (128-byte L2 promotion), the half of call 11 that
# did not run: call 11 gave lda = 1004, which the CLI refuses by name (2008 bytes is not a multiple of 16); n = 1096 (D rows 2192 bytes apart, off the lines too) because n = 1090 needs the edge copy, which 176 accumulators cannot take (refused by name, first run of this call).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
i=0
for cfg in "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp" \
           "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"; do
  i=$((i+1))
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 60 $SAN --tool memcheck --error-exitcode 9 build-lead/gemmtune tune \
    --config "sm90:$cfg" --m 1000 --n 1096 --k 1000 --lda 1000 --ldb 1032 --ldd 1096 \
    --in-process --no-cache --min-iters 1 --min-time-ms 0 --warmup 1 --settle-ms 0 < /dev/null > $O/san_$i.log 2>&1
  echo "memcheck 1000x1096x1000 lda=1000 ldb=1032 ldd=1096 $cfg: rc=$? $(grep -E "ERROR SUMMARY|winner" $O/san_$i.log | tail -2 | tr '\n' ' ')"
done
gzip -f $O/san_*.log
