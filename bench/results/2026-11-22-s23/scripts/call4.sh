#!/usr/bin/env bash
# Session 23 device call 4: the preferred L1 / shared-memory carveout of gemv ring kernels (dynamic shared memory),
# swept, each config alone (timing_probe, rotation over 3 sets). Call 3: at 8x28672x4096 the ring config ran 63.2 us
# with the driver's choice, 60.8-61.6 with 50%, 80.5 with 0% (occupancy), 63.2 with 100%.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead NOFLUSH=1 ROUNDS=150
probe() {  # label, env, M N K, configs...
  local label=$1 envs=$2; shift 2
  echo "== $label [$envs] $(env $envs timeout 60 build-lead/timing_probe "$1" "$2" "$3" "3" "${@:4}" 2>&1 | grep -E '^rep|rror' | tr '\n' ' ')"
}
{
for pc in "8 28672 4096 gemv:vec=m,warps=4,rows=16,ksplit=1,unroll=1,mma=1,ring=4" \
          "16 4096 14336 gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4" \
          "8 4096 14336 gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4" \
          "8 6144 4096 gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4" \
          "5 4096 4096 gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4" \
          "16 28672 4096 gemv:vec=m,warps=4,rows=16,ksplit=1,unroll=1,mma=1,ring=4"; do
  set -- $pc
  for cv in unset 20 30 40 50 60 70 85; do
    e=$([ $cv = unset ] && echo "X=1" || echo "GEMMTUNE_GEMV_CARVEOUT=$cv")
    probe "$1x$2x$3 $4" "$e" $1 $2 $3 $4
  done
done
} 2>&1 | tee $O/carveout_sweep.txt
