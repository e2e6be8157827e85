#!/usr/bin/env bash
# Session 17 device call 7: the build with 128-byte L2 promotion for rows off the 128-byte lines and the ranking's
# off-the-lines term. 1) every sm90 candidate timed (--top-k 300) at problems whose rows are off the lines, to read
# the rank of the fastest (scripts/rank_survey.py); 2) the default tune (top 8 per backend + runoff) there; 3) every
# GPU test.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
LIST="6000 6000 1000|4096 4096 1000|4096 4096 1032|8192 8192 4104|2048 8192 2000|4096 14336 1000|3000 5000 1000|6000 4096 1024 --A bf16:col|4096 4096 1040"
i=0
IFS='|' read -ra PROBS <<<"$LIST"
for pr in "${PROBS[@]}"; do
  read -r m n k extra <<<"$pr"; i=$((i+1)); tag="s${i}_${m}x${n}x${k}"
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 75 build-lead/gemmtune tune --m $m --n $n --k $k $extra --backends sm90,cublaslt \
    --top-k 300 --min-time-ms 15 --min-iters 5 --warmup 3 --no-cache --json $O/$tag.json < /dev/null > /dev/null 2> $O/$tag.log
  echo "survey $tag [$extra] rc=$?"
done
python3 scripts/rank_survey.py $(ls $O/s*.json | sort -V) --show 3
i=0
for pr in "${PROBS[@]}"; do
  read -r m n k extra <<<"$pr"; i=$((i+1)); tag="d${i}_${m}x${n}x${k}"
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k $extra --backends sm90,cublaslt \
    --no-cache < /dev/null > $O/$tag.txt 2> $O/$tag.log
  echo "== default tune $tag [$extra] rc=$?"; grep -A7 "runoff" $O/$tag.log | sed 's/^ *//' | awk '{printf "%-100s %s\n", substr($1,1,100), $2}'
done
tar czf $O/survey.tgz -C $O $(cd $O && ls s*_* d*_*) && (cd $O && rm -f s*_* d*_*)
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 340 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
