#!/usr/bin/env bash
# Session 18 device call 2: warp pieces of 16 rows (one store per warp, strip and slab: 6 stores per warp and tile at
# 128x176 instead of 12) against 8 rows (both with sector-aligned 128-byte strips + tail) and the session-17 build
# (176-byte 8-row pieces), side by side with cuBLASLt's 176x128 in each process, interleaved, two reps.
set -u
O=$1
CFG=(--config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,epi=warp"
     --config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp"
     --config "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0")
for p in "8192 6144 512" "16384 6144 512" "8192 6144 1024" "4096 14336 1024" "8192 6144 4096"; do
  set -- $p
  for rep in 1 2; do
    for b in old lead x16; do
      L=$O/t_${1}_${2}_${3}_${b}_$rep.log
      LD_LIBRARY_PATH=build-$b GEMMTUNE_CACHE_DIR=/tmp/gtc_$b timeout 60 build-$b/gemmtune tune --m $1 --n $2 --k $3 \
        "${CFG[@]}" --no-cache < /dev/null > /dev/null 2> $L
      echo "== ${1}x${2}x${3} $b rep$rep rc=$? $(grep -A4 'side by side' $L | grep ' us ' | awk '{printf "%s ", $2}') $(grep -ciE 'mismatch|fail' $L)"
    done
  done
done
# x16 correctness beyond the tuner's check of the runs above: ragged N (edge copy), f32 D, C, MN-major A, batches.
i=0
for q in "--m 1000 --n 1003 --k 520 --ldd 1008" "--m 300 --n 521 --k 1000 --batch 3 --D f32:row --ldd 528" \
         "--m 2048 --n 1536 --k 520 --A f16:row --B f16:col --C f16:row --D f16:row --beta 0.5" \
         "--m 17 --n 33 --k 65 --A bf16:col --lda 24 --B bf16:col --ldb 72 --D bf16:row --ldd 40"; do
  i=$((i+1))
  LD_LIBRARY_PATH=build-x16 GEMMTUNE_CACHE_DIR=/tmp/gtc_x16 timeout 60 build-x16/gemmtune tune $q \
    --config "sm90:tile=128x128x64,stages=6,cluster=1x1,sched=pingpong,raster=m,group=8,epi=warp" \
    --config "sm90:tile=64x176x64,stages=6,cluster=1x1,sched=pingpong,raster=n,group=8,epi=warp" \
    --config "sm90:tile=64x16x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=8,epi=warp" \
    --no-cache < /dev/null > /dev/null 2> $O/x16_check_$i.log
  echo "== x16 check $q rc=$?"; grep -E ' us |wrong|error|crash|skip' $O/x16_check_$i.log | head -6
done
tar czf $O/logs.tgz -C $O $(cd $O && ls t_* x16_*) && (cd $O && rm -f t_* x16_*)
