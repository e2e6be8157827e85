#!/usr/bin/env bash
# session-13 device call 6: the ping-pong hand-off in detail (build-trace = HEAD + trace2.patch): per tile, the order
# wait, the first full-barrier wait, the first k-block's wgmma issue and commit, against the previous tile's drain.
set -u
O=$1
export LD_LIBRARY_PATH=build-trace GEMMTUNE_CACHE_DIR=/tmp/gtc_tr
G=",cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
run() {
  GEMMTUNE_TRACE_FILE=$O/trace_$1.bin timeout 60 build-trace/gemmtune tune --m $2 --n $3 --k $4 --config "sm90:$5" --in-process \
    --no-cache --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/trace_$1.txt 2>&1
  echo "== $1 rc=$?"; python3 bench/results/2026-11-21-s13/scripts/trace_setup.py $O/trace_$1.bin
}
run p176_k4096 8192 6144 4096 "tile=128x176x64,stages=5$G"
run p128_4096c 4096 4096 4096 "tile=128x128x64,stages=6$G"
run p176_k512 8192 6144 512 "tile=128x176x64,stages=5$G"
