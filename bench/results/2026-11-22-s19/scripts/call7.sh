#!/usr/bin/env bash
# Session 19 device call 7: the large suite on the final build (cold caches): the stream-K kernels' unit math moved
# (sm90_shape.cuh sk_unit) and split mode exists; large shapes have more tiles than clusters, so only tail twins run.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_large timeout 250 build-lead/gemmtune bench --suite bench/suites/large.json \
  --json $O/large.json > $O/large.txt 2>$O/large.log
echo "large rc=$?"; cut -c1-200 $O/large.txt
gzip -f $O/large.log
