#!/usr/bin/env bash
# Session 21 device call 8: the gemv list's head now holds the best of each (kernel, ksplit) family (the model alone
# put call 5's winners 8th-60th at some problems): the decode suite with default tunes (top 8 per backend).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 200 build-lead/gemmtune bench --suite bench/suites/decode.json \
  --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "decode rc=$?"; cut -c1-175 $O/decode.txt
gzip -f $O/decode.log
