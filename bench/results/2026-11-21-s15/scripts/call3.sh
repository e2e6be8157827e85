#!/usr/bin/env bash
# session-15 device call 3: the large suite on HEAD (the kernels of session 12; tile K 32 and the evict_first store
# were not kept), twice with fresh caches, for the closing state of issue 3: which backend `tune` picks per shape.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv > $O/gpu.txt 2>&1
for rep in 1 2; do
  GEMMTUNE_CACHE_DIR=/tmp/gtc_large_$rep timeout 250 build-lead/gemmtune bench --suite bench/suites/large.json --json $O/bench_large_$rep.json \
    > $O/bench_large_$rep.txt 2> $O/bench_large_$rep.log
  echo "== large rep $rep rc=$?"; cut -c1-200 $O/bench_large_$rep.txt
done
gzip -f $O/*.log
