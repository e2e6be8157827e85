#!/usr/bin/env bash
# Session 23 device call 3: why gemv kernels time 2-6% slower in mixed candidate lists than among gemv configs.
# Hypothesis: the L1 / shared-memory carveout. sm90 and cuBLASLt kernels run with (nearly) all 228 KB as shared
# memory; a gemv kernel launched right after one may keep that split (a small L1 for the vectors), while after
# another gemv it gets a large L1. scripts/timing_probe.cpp interleaves configs slot by slot (rotation over 3 input
# sets, no flush); GEMMTUNE_GEMV_CARVEOUT (experiment hook in this build) sets the gemv kernels' preferred carveout.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead NOFLUSH=1 ROUNDS=150
probe() {  # label, env, M N K, configs...
  local label=$1 envs=$2; shift 2
  echo "== $label [$envs]"
  env $envs timeout 60 build-lead/timing_probe "$1" "$2" "$3" "3" "${@:4}" 2>&1 | grep -E "^rep|error|Error" 
}
G8=gemv:vec=m,warps=4,rows=16,ksplit=1,unroll=1,mma=1,ring=4
G8b=gemv:vec=m,warps=4,rows=32,ksplit=1,unroll=2,mma=1
S8=sm90:tile=256x16x64,stages=6,cluster=1x1,sched=coop,raster=m,group=3,swap=1
C=cublaslt:default
{
for cv in unset 0 50 100; do
  e=$([ $cv = unset ] && echo "X=1" || echo "GEMMTUNE_GEMV_CARVEOUT=$cv")
  probe "8x28672x4096 G alone" "$e" 8 28672 4096 $G8
  probe "8x28672x4096 G,Gb" "$e" 8 28672 4096 $G8 $G8b
  probe "8x28672x4096 G,S" "$e" 8 28672 4096 $G8 $S8
  probe "8x28672x4096 G,C" "$e" 8 28672 4096 $G8 $C
done
G16=gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4
G16b=gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1
for cv in unset 0 100; do
  e=$([ $cv = unset ] && echo "X=1" || echo "GEMMTUNE_GEMV_CARVEOUT=$cv")
  probe "16x4096x14336 G,Gb" "$e" 16 4096 14336 $G16 $G16b
  probe "16x4096x14336 G,C" "$e" 16 4096 14336 $G16 $C
done
G1=gemv:vec=m,warps=4,rows=2,ksplit=4,unroll=4
G1b=gemv:vec=m,warps=8,rows=4,ksplit=8,unroll=2
for cv in unset 0 100; do
  e=$([ $cv = unset ] && echo "X=1" || echo "GEMMTUNE_GEMV_CARVEOUT=$cv")
  probe "1x4096x14336 G,Gb" "$e" 1 4096 14336 $G1 $G1b
  probe "1x4096x14336 G,C" "$e" 1 4096 14336 $G1 $C
done
} 2>&1 | tee $O/carveout.txt
