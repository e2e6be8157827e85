#!/usr/bin/env bash
# session-8 device call 6: final build (probe launches under one mutex, refused cluster sizes skipped, GpcProbe GPU
# test): every GPU test; the one-time cost of the probes (wall of a one-config tune, static vs gpc, fresh processes).
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
timeout 300 $B/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "Which is|FAILED|GpcProbe" $O/gpu_tests.log | head -20
C="tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8"
for rep in 1 2; do
  for t in "" ",tiles=gpc"; do
    /usr/bin/time -f "process %e s" timeout 60 $B/gemmtune tune --m 4096 --n 4096 --k 4096 --config "sm90:$C$t" \
      --in-process --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 2>&1 | grep -E "^winner|process" | sed "s/^/[$t] /"
  done
done | tee $O/probe_cost.txt
gzip -f $O/gpu_tests.log
