#!/usr/bin/env bash
# Session 20 device call 8 (the committed decode tiles, a4b706b): the new decode suite and the Llama-3-8B suite,
# cold caches.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
for s in decode llama3_8b; do
  GEMMTUNE_CACHE_DIR=/tmp/gtc_$s timeout 280 build-lead/gemmtune bench --suite bench/suites/$s.json \
    --json $O/$s.json > $O/$s.txt 2> $O/$s.log
  echo "$s rc=$?"; cut -c1-175 $O/$s.txt
  gzip -f $O/$s.log
done
