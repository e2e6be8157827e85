#!/usr/bin/env bash
# Session 22 device call 3: candidates in a fresh random order each round (on top of call 2's buffer sets).
# 1) TunerGpu.* 2) default tunes (mixed lists: sm90, gemv, cuBLASLt) at decode and large sizes: first pass vs
# runoff 3) the decode suite 4) Inductor on it with the same timing (torch_baseline.py --timing rotate).
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead
timeout 200 build-lead/tests/gemmtune_gpu_tests --gtest_filter='TunerGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -20
for s in 1,4096,14336 1,28672,4096 1,4096,4096 16,4096,14336 8,28672,4096 64,4096,4096 2048,4096,4096; do
  IFS=, read -r m n k <<<"$s"
  L=$O/all_${m}_${n}_${k}.log
  timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --no-cache < /dev/null > $L.out 2> $L
  echo "== default ${m}x${n}x${k} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
done
timeout 200 build-lead/gemmtune bench --suite bench/suites/decode.json --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; cut -c1-175 $O/decode.txt
tar czf $O/logs.tgz -C $O $(cd $O && ls all_*) && (cd $O && rm -f all_*)
gzip -f $O/tests.log $O/decode.log
timeout 300 python3 bench/torch_baseline.py --suite bench/suites/decode.json --json $O/torch_decode.json \
  --gemmtune-json $O/decode.json > $O/torch_decode.txt 2> $O/torch_decode.log
echo "torch decode rc=$?"; sed -n '/x inductor/,$p' $O/torch_decode.txt | cut -c1-175; tail -3 $O/torch_decode.log
gzip -f $O/torch_decode.log
