#!/usr/bin/env bash
# Session 20 device call 5: the swapped orientation at decode sizes, measured through the existing column-major-D
# path (D col-major = the kernel computes D^T = B^T A^T: weights on the wgmma M side, tokens on N). Tile N = tokens
# rounded up to 16. Experiment build (stages up to 16). Side by side with cuBLASLt's default on the same problem.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead
G="raster=m,group=1"
run() {  # m n k bn
  local m=$1 n=$2 k=$3 bn=$4 C=()
  for t in "128x${bn}x64,stages=11,cluster=1x1,sched=pingpong" "128x${bn}x64,stages=11,cluster=2x1,sched=pingpong" \
           "128x${bn}x64,stages=8,cluster=1x1,sched=pingpong" "128x${bn}x64,stages=11,cluster=1x1,sched=coop" \
           "64x${bn}x64,stages=16,cluster=1x1,sched=pingpong" "256x${bn}x64,stages=6,cluster=1x1,sched=coop"; do
    C+=(--config "sm90:tile=$t,$G,tail=sk")
  done
  C+=(--config "sm90:tile=128x${bn}x64,stages=11,cluster=1x1,sched=pingpong,$G" --config cublaslt:default)
  local L=(); [ $m -lt 8 ] && L=(--ldd 8)  # a TMA-legal column pitch (16 bytes)
  timeout 120 build-lead/gemmtune tune --m $m --n $n --k $k --D bf16:col "${L[@]}" "${C[@]}" --no-cache \
    > $O/t_${m}_${n}_${k}.txt 2> $O/t_${m}_${n}_${k}.log
  echo "== ${m}x${n}x${k} D col-major rc=$?"
  grep -A100 "side by side" $O/t_${m}_${n}_${k}.log | sed 's/^ *//' | awk 'NF>=2{printf "%-90s %s\n", $1, $2}' | sort -k2 -n | head -12
  grep -iE "error|fail|mismatch" $O/t_${m}_${n}_${k}.log | head -5
}
run 16 4096 14336 16
run 1 4096 14336 16
run 32 4096 14336 32
run 16 4096 4096 16
run 16 6144 4096 16
run 16 28672 4096 16
run 64 8192 8192 64
run 16 4096 8192 16
tar czf $O/logs.tgz -C $O $(cd $O && ls t_*) && (cd $O && rm -f t_*)
