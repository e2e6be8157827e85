#!/usr/bin/env bash
# Session 22 device call 8: Inductor timed like gemmtune (--timing rotate) on the large suite (against call 6's
# large1.json) and on Llama-3-8B (gemmtune bench first, cold cache).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_l8 timeout 150 build-lead/gemmtune bench --suite bench/suites/llama3_8b.json \
  --json $O/llama3_8b.json > $O/llama3_8b.txt 2> $O/llama3_8b.log
echo "llama3_8b rc=$?"; cut -c1-175 $O/llama3_8b.txt
timeout 200 python3 bench/torch_baseline.py --suite bench/suites/llama3_8b.json --json $O/torch_llama3_8b.json \
  --gemmtune-json $O/llama3_8b.json > $O/torch_llama3_8b.txt 2> $O/torch_llama3_8b.log
echo "torch llama3_8b rc=$?"; sed -n '/x inductor/,$p' $O/torch_llama3_8b.txt | cut -c1-175
timeout 220 python3 bench/torch_baseline.py --suite bench/suites/large.json --json $O/torch_large.json \
  --gemmtune-json bench/results/2026-11-22-s22/call6/large1.json > $O/torch_large.txt 2> $O/torch_large.log
echo "torch large rc=$?"; sed -n '/x inductor/,$p' $O/torch_large.txt | cut -c1-175
tar czf $O/logs.tgz -C $O llama3_8b.log torch_llama3_8b.log torch_large.log torch_llama3_8b.txt torch_large.txt && \
  (cd $O && rm -f llama3_8b.log torch_llama3_8b.log torch_large.log torch_llama3_8b.txt torch_large.txt)
