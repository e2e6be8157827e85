#!/usr/bin/env bash
# Session 17 device call 8: the final ranking (rows off the lines charged flat on sectors, no stream-K twins below 24
# k-blocks): the default tune (top 8 per backend + runoff) at the problems of calls 1 and 7 whose ranking changed, and
# the large suite.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
LIST="6000 6000 1000|4096 4096 1000|4096 4096 1032|4096 4096 1040|2048 8192 2000|4096 14336 1000|4096 8192 512|4096 14336 1024|8192 6144 512"
IFS='|' read -ra PROBS <<<"$LIST"
i=0
for pr in "${PROBS[@]}"; do
  read -r m n k extra <<<"$pr"; i=$((i+1)); tag="d${i}_${m}x${n}x${k}"
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k $extra --backends sm90,cublaslt \
    --no-cache < /dev/null > $O/$tag.txt 2> $O/$tag.log
  echo "== default tune $tag [$extra] rc=$?"; grep -A7 "runoff" $O/$tag.log | sed 's/^ *//' | awk '{printf "%-100s %s\n", substr($1,1,100), $2}'
done
tar czf $O/tunes.tgz -C $O $(cd $O && ls d*_*) && (cd $O && rm -f d*_*)
GEMMTUNE_CACHE_DIR=/tmp/gtc_l timeout 250 build-lead/gemmtune bench --suite bench/suites/large.json --json $O/large.json > $O/large.txt 2>$O/large.log
echo "large rc=$?"; cut -c1-200 $O/large.txt; gzip -f $O/large.log
