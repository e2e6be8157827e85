#!/usr/bin/env bash
# Session 23 device call 2: 1) scripts/stream_probe.cu (built here with nvcc): streaming W in gemv access patterns,
# no arithmetic, at the two decode weight shapes 2) the decode suite on HEAD.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
for s in "4096 14336" "28672 4096"; do
  echo "== stream_probe $s"; timeout 60 build-lead/stream_probe $s
done 2>&1 | tee $O/stream_probe.txt
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 200 build-lead/gemmtune bench --suite bench/suites/decode.json \
  --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; cut -c1-175 $O/decode.txt
gzip -f $O/decode.log
