#!/usr/bin/env bash
# Session 17 device call 1: how good is the sm90 ranking? Every enumerated sm90 candidate (--top-k 0) and every
# cuBLASLt heuristic algorithm timed side by side at problems no suite lists (short K, ragged, narrow, small M, other
# layouts and dtypes), so the rank the model gave the fastest candidate can be read off (scripts: bench/rank_survey.py).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
i=0
while read -r m n k extra; do
  [ -z "$m" ] && continue
  i=$((i+1)); tag="p${i}_${m}x${n}x${k}"
  [ $SECONDS -gt 470 ] && { echo "$tag skipped (time)"; continue; }
  t0=$SECONDS
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 75 build-lead/gemmtune tune --m $m --n $n --k $k $extra --backends sm90,cublaslt \
    --top-k 300 --min-time-ms 15 --min-iters 5 --warmup 3 --no-cache --json $O/$tag.json < /dev/null > /dev/null 2> $O/$tag.log
  rc=$?
  echo "$tag [$extra] rc=$rc $((SECONDS-t0)) s $(grep '^winner' $O/$tag.log | cut -c1-170)"
done <<'LIST'
4096 8192 512
8192 6144 512
4096 14336 1024
2048 2048 2048
3000 5000 2000
1024 8192 4096
512 4096 4096
8192 1024 8192
16384 2048 1024
2560 7680 2560
6000 6000 1000
4224 3328 3072
2048 8192 8192
4096 4096 4096 --A bf16:col
4096 4096 4096 --A f16:row --B f16:col --D f32:row
8192 8192 2048
2048 6144 4096
2048 4096 4096
2048 4096 14336
8192 6144 4096
8192 4096 4096
4096 10240 8192
4096 4096 4096
2048 28672 4096
LIST
tar czf $O/survey.tgz -C $O $(cd $O && ls p*.json p*.log) && rm -f $O/p*.json $O/p*.log
