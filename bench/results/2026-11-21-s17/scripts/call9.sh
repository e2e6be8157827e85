#!/usr/bin/env bash
# Session 17 device call 9: where the short-K per-tile excess goes. ncu SourceCounters (warp-stall samples and
# execution counts per SASS instruction, clocks at base) for our ping-pong 128x176 2x1 epi=warp and cuBLASLt's nvjet
# 176x128 1x2 at 8192x6144x512 (our best 3.3% behind there) and, for the excess at long K, 8192x6144x4096.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
P176="sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp"
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
sass() {  # tag "m n k" config kernel-regex
  read -r m n k <<<"$2"
  timeout 150 ncu --clock-control base -k "$4" --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg,smsp__inst_executed.sum \
    --import-source no -f -o $O/rep_$1 build-lead/gemmtune tune --m $m --n $n --k $k \
    --config "$3" --in-process --no-cache --min-iters 5 --min-time-ms 0 --warmup 1 --settle-ms 0 < /dev/null > $O/ncu_$1.log 2>&1
  echo "== $1 rc=$?"
  timeout 90 ncu -i $O/rep_$1.ncu-rep --page details > $O/details_$1.txt 2>&1
  grep -E "Duration|Elapsed Cycles|hmma|inst_executed|Stall|Warp Cycles Per Issued" $O/details_$1.txt | sed 's/  */ /g' | head -12
  timeout 90 ncu -i $O/rep_$1.ncu-rep --page source --print-source sass --csv > $O/sass_$1.csv 2> $O/sass_$1.err
  echo "   sass csv rc=$? lines=$(wc -l < $O/sass_$1.csv)"
}
sass pp176_k512 "8192 6144 512" "$P176" 'regex:^gt_sm90_pp'
sass cb176_k512 "8192 6144 512" "$CB176" 'regex:nvjet'
sass pp176_k4096 "8192 6144 4096" "$P176" 'regex:^gt_sm90_pp'
sass cb176_k4096 "8192 6144 4096" "$CB176" 'regex:nvjet'
gzip -f $O/*.csv
tar czf $O/ncu.tgz -C $O $(cd $O && ls rep_* sass_* details_* ncu_*) && (cd $O && rm -f rep_* sass_* details_* ncu_*)
