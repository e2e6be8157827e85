#!/usr/bin/env bash
# Session 20 device call 9: TorchInductor max-autotune on the decode suite and Llama-3-8B against call 8's gemmtune
# tables (graph replays, bench/torch_baseline.py), then the large suite on this build (the refused tail=sk configs
# change the twins it lists; cold caches).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
for s in decode llama3_8b; do
  timeout 200 python3 bench/torch_baseline.py --suite bench/suites/$s.json --json $O/torch_$s.json \
    --gemmtune-json bench/results/2026-11-22-s20/call8/$s.json > $O/torch_$s.txt 2> $O/torch_$s.log
  echo "torch $s rc=$?"; cat $O/torch_$s.txt
  gzip -f $O/torch_$s.log
done
GEMMTUNE_CACHE_DIR=/tmp/gtc_large timeout 170 build-lead/gemmtune bench --suite bench/suites/large.json \
  --json $O/large.json > $O/large.txt 2> $O/large.log
echo "large rc=$?"; cut -c1-175 $O/large.txt
gzip -f $O/large.log
