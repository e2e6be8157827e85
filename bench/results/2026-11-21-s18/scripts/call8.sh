#!/usr/bin/env bash
# Session 18 device call 8: the final build on the large and Llama-3-8B suites (call 4 ran before the epi=warp rings
# change; its Llama-3-8B JSON did not come back: too many files).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
for suite in large llama3_8b; do
  GEMMTUNE_CACHE_DIR=/tmp/gtc_$suite timeout 250 build-lead/gemmtune bench --suite bench/suites/$suite.json --json $O/$suite.json > $O/$suite.txt 2>$O/$suite.log
  echo "$suite rc=$?"; cut -c1-200 $O/$suite.txt
done
tar czf $O/logs.tgz -C $O large.log llama3_8b.log && rm -f $O/large.log $O/llama3_8b.log
