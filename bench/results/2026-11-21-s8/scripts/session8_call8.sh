#!/usr/bin/env bash
# session-8 device call 8: the ping-pong 128x112 2x1 gpc twin inside a normal tune (worker, ranked top 8 + cuBLASLt)
# at 4096³ twice, against its isolated time in call 6 (181.6 us) and its suite time in call 7 (212.5 us).
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
for rep in 1 2; do
  timeout 120 $B/gemmtune tune --m 4096 --n 4096 --k 4096 > $O/tune_4096.$rep.txt 2> $O/tune_4096.$rep.log
  echo "== rep $rep rc=$?"; grep -E "128x112|128x128x64.*gpc|winner|runoff|cublaslt:default" $O/tune_4096.$rep.log $O/tune_4096.$rep.txt | cut -c1-160
done
