#!/usr/bin/env bash
# Session 19 device call 5: tail=sk split mode (fewer cluster tiles than clusters: every tile's k-blocks shared out
# over the grid). 1) The stream-K GPU tests (the new Sm90Gpu.StreamKSplit and the tail test). 2) Default tunes, both
# backends, at the Llama-3-8B M = 16 / 128 shapes and three more skinny problems: the side-by-side first pass and the
# winner. 3) Plain against split at the same tile, side by side with cuBLASLt's default, one process per problem.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
timeout 240 build-lead/tests/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.StreamK*' > $O/sk_tests.log 2>&1
echo "sk tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/sk_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills" $O/sk_tests.log | head -20
for p in "16 6144 4096" "16 4096 4096" "16 28672 4096" "16 4096 14336" "128 6144 4096" "128 4096 4096" \
         "128 28672 4096" "128 4096 14336" "64 8192 8192" "256 4096 4096" "1 4096 4096"; do
  set -- $p
  L=$O/tune_${1}_${2}_${3}.log
  timeout 90 build-lead/gemmtune tune --m $1 --n $2 --k $3 --backends sm90,cublaslt --no-cache < /dev/null > $L.out 2> $L
  echo "== ${1}x${2}x${3} rc=$? winner: $(grep -m1 -o 'winner.*' $L.out | cut -c1-150)"
  awk '/side by side/{f=1;next} f&&/ us /{print} f&&!/ us /{f=0}' $L | sort -t'|' -k1 | \
    awk '{for(i=1;i<=NF;i++) if($i=="us"){print "   ", $(i-1), $1; break}}' | sort -n | head -8
done
for p in "16 4096 14336" "128 6144 4096" "16 6144 4096"; do
  set -- $p
  L=$O/pair_${1}_${2}_${3}.log
  C=()
  for t in "64x256x64,stages=4,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc" \
           "64x128x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc" \
           "128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc"; do
    C+=(--config "sm90:tile=$t" --config "sm90:tile=$t,tail=sk")
  done
  timeout 90 build-lead/gemmtune tune --m $1 --n $2 --k $3 "${C[@]}" --config cublaslt:default --no-cache \
    < /dev/null > /dev/null 2> $L
  echo "== pairs ${1}x${2}x${3} rc=$?"
  awk '/side by side/{f=1;next} f&&/ us /{print} f&&!/ us /{f=0}' $L | \
    awk '{for(i=1;i<=NF;i++) if($i=="us"){print "   ", $(i-1), $1; break}}'
done
tar czf $O/logs.tgz -C $O $(cd $O && ls tune_* pair_*) && (cd $O && rm -f tune_* pair_*)
gzip -f $O/sk_tests.log
