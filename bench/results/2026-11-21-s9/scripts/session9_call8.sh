#!/usr/bin/env bash
# session-9 device call 8: the suites with the revised estimate (128-wide ping-pong gpc twins unpenalised).
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
timeout 150 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json > $O/bench_large.txt 2> $O/bench_large.log
echo "large rc=$?"; cat $O/bench_large.txt
timeout 120 $B/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/bench_llama3_8b.json > $O/bench_llama3_8b.txt 2> $O/bench_llama3_8b.log
echo "llama rc=$?"; tail -3 $O/bench_llama3_8b.txt
gzip -f $O/*.log
