#!/usr/bin/env bash
# Session 18 device call 7: the final build (epi=warp rings deep enough for 16-row pieces): every GPU test, default
# tunes at short K (ours / cuBLASLt's best in one runoff), the fused-epilogue suite (128x96 epi=warp now 6 stages).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 420 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
for s in "4096 8192 512" "4096 8192 1024" "8192 6144 512"; do
  read -r m n k <<<"$s"; tag="d_${m}x${n}x${k}"
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --backends sm90,cublaslt \
    --no-cache < /dev/null > $O/$tag.txt 2> $O/$tag.log
  echo "== default tune $tag rc=$?"; grep -A7 "runoff" $O/$tag.log | sed 's/^ *//' | awk '{printf "%-100s %s\n", substr($1,1,100), $2}'
done
tar czf $O/tunes.tgz -C $O $(cd $O && ls d_*) && (cd $O && rm -f d_*)
GEMMTUNE_CACHE_DIR=/tmp/gtc_e timeout 200 build-lead/gemmtune bench --suite bench/suites/epilogue_llama8b.json \
  --json $O/epilogue_llama8b.json > $O/epilogue_llama8b.txt 2> $O/epilogue_llama8b.log
echo "epilogue_llama8b rc=$?"; cut -c1-200 $O/epilogue_llama8b.txt; gzip -f $O/epilogue_llama8b.log
