#!/usr/bin/env bash
# Session 25 device call 1 (the build carried from the development host as `build`): session 24's gemv changes on the
# GPU, which its cut-off session never ran as a whole (its call 6): GemvGpu and TunerGpu tests on the final ranking;
# compute-sanitizer memcheck + racecheck on one config of each gemv kernel form (never run on gemv before); the decode
# suite; and a whole-list gemv rank survey at 1-2 vectors (session 24's survey had two such problems, one losing 6%).
set -u
O=$1
B=build
export LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,driver_version --format=csv
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 230 $B/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.*:TunerGpu.*' \
  > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs run|^\[  FAILED|Failure|Which is|threw|err=" $O/tests.log | head -20
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
san() {  # name m n k config [extra tune args]
  local name=$1 m=$2 n=$3 k=$4 cfg=$5; shift 5
  for tool in memcheck racecheck; do
    GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 45 $SAN --tool $tool --error-exitcode 9 $B/gemmtune tune --config "$cfg" \
      --m $m --n $n --k $k --in-process --no-cache --min-iters 1 --min-time-ms 0 --warmup 1 --settle-ms 0 "$@" \
      < /dev/null >> $O/san.log 2>&1
    echo "$tool $name ${m}x${n}x${k} $*: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $O/san.log | tail -1)"
  done
}
san fma 3 1000 1000 "gemv:vec=m,warps=4,rows=4,ksplit=2,unroll=2"
san mma_occ3 5 1000 1000 "gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1,occ=3" --beta 1
san mma_ring 7 1000 1000 "gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4" --epilogue bias,silu
san mma_csplit 16 1000 1000 "gemv:vec=m,warps=8,rows=32,ksplit=1,unroll=2,mma=1,csplit=8"
san mma_csplit_glu 9 1024 1000 "gemv:vec=m,warps=4,rows=16,ksplit=2,unroll=2,mma=1,csplit=4" --epilogue silu_glu
san vec_n 1000 6 1000 "gemv:vec=n,warps=8,rows=16,ksplit=8,unroll=1,mma=1" --A bf16:row --B bf16:col
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 170 $B/gemmtune bench --suite bench/suites/decode.json \
  --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode rc=$?"; cut -c1-170 $O/decode.txt
mkdir -p $O/survey
for shape in "1 4096 4096" "2 4096 4096" "1 14336 4096" "2 14336 4096" "2 6144 4096" "1 8192 8192" "2 8192 8192" \
             "2 1024 4096" "1 28672 4096" "2 128256 4096"; do
  [ $SECONDS -lt 520 ] || { echo "survey: stopped at $shape (time)"; break; }
  set -- $shape
  f=$O/survey/gemv_${1}x${2}x${3}
  GEMMTUNE_CACHE_DIR=/tmp/gtc_v timeout 45 $B/gemmtune tune --m $1 --n $2 --k $3 --backends gemv,cublaslt \
    --top-k 0 --no-cache --min-time-ms 30 --min-iters 50 --json $f.json > $f.txt 2> $f.log
  echo "$shape rc=$? $(grep -E '^winner' $f.log $f.txt | cut -c1-140)"
done
tar czf $O/survey.tgz -C $O survey && rm -rf $O/survey
gzip -f $O/tests.log $O/san.log $O/decode.log
