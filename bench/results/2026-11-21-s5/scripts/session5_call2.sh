#!/usr/bin/env bash
# session-5 device call 2: raster/group sweep of the best ping-pong tiles, ncu ours vs cuBLASLt's best, large suite.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv,noheader > $O/smi.txt
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB112="cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
grp() {  # shape tile stages extra...
  local s=$1 t=$2 st=$3; shift 3; local c=("$@")
  for r in m n; do for g in 1 2 4 8 16 32; do c+=("tile=${t}x64,stages=$st,cluster=2x1,sched=pingpong,raster=$r,group=$g"); done; done
  timeout 200 scripts/sm90_dev/ab_configs.sh $O/grp $B "$s" "${c[@]}"
}
grp 8192,6144,4096 128x176 5 "$CB176" >$O/grp_8192x6144.txt 2>&1
grp 4096,4096,4096 128x128 6 "$CB112" >$O/grp_4096.txt 2>&1
grp 4096,10240,8192 128x160 5 "$CB168" >$O/grp_4096x10240.txt 2>&1
timeout 200 scripts/sm90_dev/ncu_probe.sh $O/ncu $B "8192 6144 4096" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7" "$CB176" "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=m,group=8" >$O/ncu_summary.txt 2>&1
timeout 280 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json >$O/bench_large.txt 2>$O/bench_large.log
echo "bench rc=$?"
cd $O && tar czf extra.tgz grp ncu bench_large.log && rm -rf grp ncu bench_large.log && ls
