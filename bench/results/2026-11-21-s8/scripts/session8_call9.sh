#!/usr/bin/env bash
# session-8 device call 9: static vs gpc of the same ping-pong configs side by side (one process, interleaved), on a
# cool GPU and again after ~40 s of sustained 8192³ load (power limit), to see whether the gpc gain shrinks with heat.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
CB112="cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P112="tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8"
P128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8"
run() {
  TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $O/ab.$1 $B "4096,4096,4096" "$CB112" "$P112" "$P112,tiles=gpc" "$P128" "$P128,tiles=gpc" > /dev/null 2>&1
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader | sed "s/^/[$1 after] /"
  grep -E "^\*? *(sm90|cublaslt) " $O/ab.$1/ab_4096x4096x4096.txt | sed 's/^\* *//' | awk -v t=$1 '{print t, $2, $(NF-4)}'
}
run cool1
run cool2
timeout 120 $B/gemmtune tune --m 8192 --n 8192 --k 8192 --config cublaslt:default --no-cache --min-time-ms 40000 > /dev/null 2>&1
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader | sed "s/^/[heated] /"
run hot1
run hot2
tar czf $O/logs.tgz -C $O $(cd $O && ls -d ab.*) && rm -rf $O/ab.*
