#!/usr/bin/env bash
# session-9 device call 5: stmatrix.x2 in the epilogues (16-bit D). GPU tests of the sm90 kernels with it, then ncu with
# the clocks locked to base (so power states do not move the numbers) on the same configs built without it
# (build-old = the previous commit) and with it (build-lead), alternated twice: kernel duration, instructions, shared
# memory wavefronts.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc
LD_LIBRARY_PATH=build-lead timeout 200 build-lead/tests/gemmtune_gpu_tests --gtest_filter='Sm90*' > $O/gpu_sm90.log 2>&1
echo "sm90 gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_sm90.log | tr '\n' ' ')"
grep -E "Which is|FAILED" $O/gpu_sm90.log | head -20
run() {  # build shape config tag
  read -r m n k <<<"$2"
  LD_LIBRARY_PATH=$1 GEMMTUNE_CACHE_DIR=/tmp/gtc_$1 timeout 100 ncu --clock-control base \
    -k 'regex:^gt_sm90_(pp|coop)_' --launch-skip 2 --launch-count 3 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum \
    $1/gemmtune tune --m $m --n $n --k $k --config "sm90:$3" --in-process --no-cache --min-iters 6 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/ncu_$4_$1.txt 2>&1
  echo "$4 $1 $(grep -E 'gpu__time_duration.sum' $O/ncu_$4_$1.txt | awk '{print $NF}' | tr '\n' ' ') | inst $(grep -E 'smsp__inst_executed.sum' $O/ncu_$4_$1.txt | head -1 | awk '{print $NF}') | sts $(grep -E 'wavefronts_mem_shared_op_st' $O/ncu_$4_$1.txt | head -1 | awk '{print $NF}')"
}
for rep in 1 2; do
  for b in build-old build-lead; do
    run $b "4096 4096 4096" "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc" pp128
    run $b "8192 6144 4096" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc" pp176
    run $b "4096 4096 4096" "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16" coop256
  done
done
gzip -f $O/*.log
