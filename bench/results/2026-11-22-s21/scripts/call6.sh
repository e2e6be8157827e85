#!/usr/bin/env bash
# Session 21 device call 6: Inductor (max-autotune) on the decode suite against call 5's gemmtune run (final build).
set -u
O=$1
timeout 300 python3 bench/torch_baseline.py --suite bench/suites/decode.json --json $O/torch_decode.json \
  --gemmtune-json bench/results/2026-11-22-s21/call5/decode.json > $O/torch_decode.txt 2> $O/torch_decode.log
echo "torch decode rc=$?"; sed -n '/x inductor/,$p' $O/torch_decode.txt | cut -c1-175
gzip -f $O/torch_decode.log
