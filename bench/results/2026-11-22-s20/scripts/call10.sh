#!/usr/bin/env bash
# Session 20 device call 10: TorchInductor max-autotune on the decode suite against call 8's gemmtune table (call 9's
# run stopped at the suite's column-major-D shape; the script now skips shapes outside y = x W^T with the reason).
set -u
O=$1
timeout 300 python3 bench/torch_baseline.py --suite bench/suites/decode.json --json $O/torch_decode.json \
  --gemmtune-json bench/results/2026-11-22-s20/call8/decode.json > $O/torch_decode.txt 2> $O/torch_decode.log
echo "torch decode rc=$?"; cat $O/torch_decode.txt
gzip -f $O/torch_decode.log
