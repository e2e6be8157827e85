#!/usr/bin/env bash
# session-13 device call 5: a clock64 timeline of ping-pong kernels (experiment build build-trace = HEAD + trace.patch:
# one thread per warpgroup stamps each tile's order wait, first / last k-block issue, wgmma completion, epilogue
# issue, and its full / empty barrier wait cycles), the last launch of a short timing run.
set -u
O=$1
export LD_LIBRARY_PATH=build-trace GEMMTUNE_CACHE_DIR=/tmp/gtc_tr
G=",cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
run() {  # name m n k config
  GEMMTUNE_TRACE_FILE=$O/trace_$1.bin timeout 60 build-trace/gemmtune tune --m $2 --n $3 --k $4 --config "sm90:$5" --in-process \
    --no-cache --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/trace_$1.txt 2>&1
  echo "== $1 rc=$?"; python3 bench/results/2026-11-21-s13/scripts/trace_pp.py $O/trace_$1.bin
}
run p176_k512 8192 6144 512 "tile=128x176x64,stages=5$G"
run p176_k1024 8192 6144 1024 "tile=128x176x64,stages=5$G"
run p176_k4096 8192 6144 4096 "tile=128x176x64,stages=5$G"
run p128_4096c 4096 4096 4096 "tile=128x128x64,stages=6$G"
run p160_k512 8192 6144 512 "tile=128x160x64,stages=5$G"
run p192_k256 8192 6144 256 "tile=128x192x64,stages=4$G"
