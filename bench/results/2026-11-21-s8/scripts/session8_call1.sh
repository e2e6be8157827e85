#!/usr/bin/env bash
# session-8 device call 1:
#  (a) gpc_probe: which SMs share a GPC (scripts/sm90_dev/gpc_probe.cu), and where persistent grids land;
#  (b) the final build (build-lead, NVRTC -minimal): every GPU test;
#  (c) EXPERIMENT build-x/gpc (patch: bench/results/2026-11-21-s8/scripts/gpc_order.patch): static tile order whose
#      cluster ids are handed out GPC by GPC (a table indexed by %smid, from the probe's map), so that consecutive
#      tiles, which share an operand, run in one GPC. Its GPU tests (Sm90 subset, with the map), merged L2 sectors
#      (ncu lrc) and interleaved times against build-lead and cuBLAS.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc
nvidia-smi -q -d CLOCK,POWER > $O/smi.txt 2>&1
timeout 120 build-x/gpc_probe > $O/gpc_map.txt 2> $O/gpc_probe.err
echo "probe rc=$?"; grep "^#" $O/gpc_map.txt | cut -c1-400
export GEMMTUNE_GPC_MAP=$O/gpc_map.txt

LD_LIBRARY_PATH=build-lead timeout 300 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests (build-lead) rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "FAILED|Which is" $O/gpu_tests.log | head -20
LD_LIBRARY_PATH=build-x/gpc timeout 200 build-lead/tests/gemmtune_gpu_tests --gtest_filter='Sm90*' > $O/gpu_tests_gpc.log 2>&1
echo "gpu tests Sm90* (gpc order) rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests_gpc.log | tr '\n' ' ')"
grep -E "FAILED|Which is" $O/gpu_tests_gpc.log | head -20

CB112="cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P112="sm90:tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=m,group=5"
P128="sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
P128G8="sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=8"
P176="sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7"
P176G9="sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=9"
P176N="sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8"
C256="sm90:tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16"
MET=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lrc__lrc2xbar_sectors_op_read.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
ncu1() {  # build m n k config
  LD_LIBRARY_PATH=$1 timeout 60 ncu --clock-control none -k 'regex:^(?!gt_ref)' --launch-skip 3 --launch-count 1 --metrics $MET \
    $1/gemmtune tune --m $2 --n $3 --k $4 --config "$5" --in-process --no-cache --min-iters 3 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/tmp_ncu.txt 2>&1
  echo "== $(basename $1) $2x$3x$4 $5 rc=$?"; grep -E "^    [a-z]+__|ERR|rror" $O/tmp_ncu.txt
}
{
for b in build-lead build-x/gpc; do
  for c in "$P112" "$P128" "$P128G8" "$C256"; do ncu1 $b 4096 4096 4096 "$c"; done
  for c in "$P176" "$P176G9" "$P176N"; do ncu1 $b 8192 6144 4096 "$c"; done
done
} > $O/ncu.txt 2>&1
rm -f $O/tmp_ncu.txt
awk '/^==/{printf "\n%s %s %s ", $2, $3, $4} /hardware/{printf "hw=%s ", $3} /lrc2xbar/{printf "l2rd=%s ", $3} /dram__/{printf "dram=%s ", $3} /gpu__time/{printf "t=%s ", $3} /cycles_elapsed/{printf "clk=%s ", $3} /hmma/{printf "tc=%s ", $3}' $O/ncu.txt; echo
for rep in 1 2; do
  for b in lead gpc; do
    B=build-lead; [ $b = gpc ] && B=build-x/gpc
    TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $O/ab.$b.$rep $B "4096,4096,4096" "$CB112" "$P112" "$P128" "$P128G8" "$C256" > /dev/null 2>&1
    TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $O/ab.$b.$rep $B "8192,6144,4096" "$CB176" "$P176" "$P176G9" "$P176N" > /dev/null 2>&1
  done
done
for f in $O/ab.lead.1/ab_*.txt; do
  b=$(basename $f); echo "== $b   (lead rep1, lead rep2, gpc rep1, gpc rep2; error column of gpc rep1)"
  paste <(grep -E "^\*? *(sm90|cublaslt) " $f | sed 's/^\* *//' | sort -k2 | awk '{print $2, $(NF-4)}') \
        <(grep -E "^\*? *(sm90|cublaslt) " $O/ab.lead.2/$b | sed 's/^\* *//' | sort -k2 | awk '{print $(NF-4)}') \
        <(grep -E "^\*? *(sm90|cublaslt) " $O/ab.gpc.1/$b | sed 's/^\* *//' | sort -k2 | awk '{print $(NF-4)}') \
        <(grep -E "^\*? *(sm90|cublaslt) " $O/ab.gpc.2/$b | sed 's/^\* *//' | sort -k2 | awk '{print $(NF-4), $(NF-1), $NF}')
done | tee $O/ab_table.txt
cd $O && tar czf logs.tgz ab.* && rm -rf ab.lead.* ab.gpc.* && gzip -f gpu_tests.log gpu_tests_gpc.log
