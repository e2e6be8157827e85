#!/usr/bin/env bash
# Session 18 device call 4: sector-aligned warp strips (16-row pieces), epi=warp on 128x160 too, on the suites (large,
# Llama-3-8B, fused epilogues) and default tunes at short K (against call 13 of session 17).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
for s in "4096 8192 512" "4096 14336 1024" "8192 6144 512" "8192 6144 1024" "6000 6000 1000"; do
  read -r m n k <<<"$s"; tag="d_${m}x${n}x${k}"
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --backends sm90,cublaslt \
    --no-cache < /dev/null > $O/$tag.txt 2> $O/$tag.log
  echo "== default tune $tag rc=$?"; grep -A7 "runoff" $O/$tag.log | sed 's/^ *//' | awk '{printf "%-100s %s\n", substr($1,1,100), $2}'
done
tar czf $O/tunes.tgz -C $O $(cd $O && ls d_*) && (cd $O && rm -f d_*)
for suite in large llama3_8b epilogue_llama8b; do
  GEMMTUNE_CACHE_DIR=/tmp/gtc_$suite timeout 200 build-lead/gemmtune bench --suite bench/suites/$suite.json --json $O/$suite.json > $O/$suite.txt 2>$O/$suite.log
  echo "$suite rc=$?"; cut -c1-200 $O/$suite.txt; gzip -f $O/$suite.log
done
