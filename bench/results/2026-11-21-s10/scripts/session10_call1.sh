#!/usr/bin/env bash
# session-10 device call 1. (1) GPU tests of HEAD (the 32-bit stream-K guard and the review mends had not run on the
# GPU). (2) cuBLASLt's nvjet kernels (176x128 at 8192x6144x4096, 112x128 at 4096^3) and ours at the same tile, SASS
# with per-instruction execution counts (ncu SourceCounters, clocks at base): their k-block loop against ours.
# (3) Experiment build (build-var, `exp=1`): HGMMAs issued slab-major (the 4 k16 steps of one 64-row slab back to back,
# same accumulator registers) instead of k-major (alternating the two slabs' accumulators). Interleaved side by side
# against the same config without it and cuBLASLt; ncu cycles at base clock; sustained clock and power.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB112="cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P112="tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
C256="tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16"

LD_LIBRARY_PATH=build-lead timeout 280 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED" $O/gpu_tests.log | head

ncu --help > $O/ncu_help.txt 2>&1
sass() {  # tag shape config kernel-regex
  read -r m n k <<<"$2"
  LD_LIBRARY_PATH=build-lead timeout 120 ncu --clock-control base -k "$4" --launch-skip 2 --launch-count 1 \
    --section SourceCounters --import-source no -f -o $O/rep_$1 build-lead/gemmtune tune --m $m --n $n --k $k \
    --config "$3" --in-process --no-cache --min-iters 4 --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/ncu_$1.log 2>&1
  echo "== $1 rc=$?"
  timeout 60 ncu -i $O/rep_$1.ncu-rep --page source --print-source sass --csv > $O/sass_$1.csv 2> $O/sass_$1.err
  echo "   sass csv rc=$? lines=$(wc -l < $O/sass_$1.csv)"
  if [ ! -s $O/sass_$1.csv ]; then
    timeout 60 ncu -i $O/rep_$1.ncu-rep --page source --csv > $O/sass_$1.csv 2>> $O/sass_$1.err
    echo "   fallback rc=$? lines=$(wc -l < $O/sass_$1.csv)"
  fi
}
sass cb176 "8192 6144 4096" "$CB176" 'regex:nvjet'
sass cb112 "4096 4096 4096" "$CB112" 'regex:nvjet'
sass pp176 "8192 6144 4096" "sm90:$P176" 'regex:^gt_sm90_pp'
gzip -f $O/*.csv

# (3) slab-major HGMMA order, interleaved in one process (build-var)
GEMMTUNE_CACHE_DIR=/tmp/gtv scripts/sm90_dev/ab_configs.sh $O/ab build-var "8192,6144,4096" "$CB176" "$P176" "$P176,exp=1" "$C256" "$C256,exp=1"
GEMMTUNE_CACHE_DIR=/tmp/gtv scripts/sm90_dev/ab_configs.sh $O/ab build-var "4096,4096,4096" "$CB112" "$P128" "$P128,exp=1" "$P112" "$P112,exp=1"
GEMMTUNE_CACHE_DIR=/tmp/gtv scripts/sm90_dev/ab_configs.sh $O/ab2 build-var "8192,6144,4096" "$CB176" "$P176" "$P176,exp=1"

M="gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum"
for rep in 1 2; do
  for e in "" ",exp=1"; do
    LD_LIBRARY_PATH=build-var GEMMTUNE_CACHE_DIR=/tmp/gtv timeout 100 ncu --clock-control base -k 'regex:^gt_sm90_pp' \
      --launch-skip 2 --launch-count 2 --metrics $M build-var/gemmtune tune --m 8192 --n 6144 --k 4096 \
      --config "sm90:$P176$e" --in-process --no-cache --min-iters 6 --min-time-ms 0 --warmup 1 --settle-ms 0 \
      > $O/ncu_exp$rep$e.txt 2>&1
    echo "ncu pp176$e rep $rep: $(grep -E 'gpu__time_duration|sm__cycles_elapsed.avg |inst_executed|hmma_cycles' $O/ncu_exp$rep$e.txt | awk '{print $1, $NF}' | tr '\n' ' ')"
  done
done
sustain() {  # tag shape config
  read -r m n k <<<"$2"
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > $O/smi_$1.csv &
  sp=$!
  LD_LIBRARY_PATH=build-var GEMMTUNE_CACHE_DIR=/tmp/gtv timeout 60 build-var/gemmtune tune --m $m --n $n --k $k \
    --config "$3" --in-process --no-cache --min-time-ms 4000 --settle-ms 0 > $O/sustain_$1.txt 2>&1
  kill $sp; wait $sp 2>/dev/null
  echo "$1 $(grep -E '^winner' $O/sustain_$1.txt | grep -oE '[0-9.]+ us' | head -1) | $(tail -25 $O/smi_$1.csv | awk -F, '{c+=$1; p+=$2; n++} END {printf "%.0f MHz %.0f W", c/n, p/n}')"
}
for rep in 1 2; do
  sustain pp176.$rep "8192 6144 4096" "sm90:$P176"
  sustain pp176x.$rep "8192 6144 4096" "sm90:$P176,exp=1"
  sustain cb176.$rep "8192 6144 4096" "$CB176"
done
gzip -f $O/*.log
