#!/usr/bin/env bash
# Session 23 device call 11 (experiment build: scripts/noreduce_hook.patch): what the K split's reduction costs.
# timing_probe (rotation over 3 sets) of csplit configs beside the best plain config, once as built and once with
# GEMMTUNE_EXP_NOREDUCE (the split CTAs skip the partials, fences and count; the last split stores its own partial:
# wrong results, timing only).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead NOFLUSH=1 ROUNDS=150 GEMMTUNE_CACHE_DIR=/tmp/gtc
P8="gemv:vec=m,warps=8,rows=32,ksplit=8,unroll=2,mma=1"
S8a="gemv:vec=m,warps=8,rows=32,ksplit=1,unroll=1,mma=1,csplit=8"
S8b="gemv:vec=m,warps=8,rows=16,ksplit=2,unroll=1,mma=1,csplit=4"
P16="gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1"
S16="gemv:vec=m,warps=8,rows=16,ksplit=1,unroll=2,mma=1,csplit=8"
{
for e in X=1 GEMMTUNE_EXP_NOREDUCE=1; do
  echo "== 8x4096x14336 [$e] $P8 | $S8a | $S8b"
  env $e timeout 90 build-lead/timing_probe 8 4096 14336 "3" $P8 $S8a $S8b 2>&1 | grep -E "^rep|rror"
  echo "== 16x4096x14336 [$e] $P16 | $S16"
  env $e timeout 90 build-lead/timing_probe 16 4096 14336 "3" $P16 $S16 2>&1 | grep -E "^rep|rror"
done
} 2>&1 | tee $O/noreduce.txt
