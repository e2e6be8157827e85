#!/usr/bin/env bash
# session-5 device call 3: all GPU tests + sanitizer on the new build, then base vs new side by side.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader > $O/smi.txt
LD_LIBRARY_PATH=build-lead timeout 300 build-lead/tests/gemmtune_gpu_tests > $O/tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "^\[  PASSED|^\[  FAILED|FAILED  \]" $O/tests.log | head
LD_LIBRARY_PATH=build-lead scripts/sanitize_sm90.sh $O/san.log build-lead/gemmtune 150 "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7" "tile=128x256x64,stages=4,cluster=2x2,sched=coop,raster=m,group=8" > $O/san_summary.txt 2>&1; cat $O/san_summary.txt
export LIST_BUILD=build-lead
export EXTRA="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0 cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0 cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0 cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
P=""
for t in 176 144 192 128 160; do P="$P 128x${t}x64,.*cluster=2x1,sched=pingpong"; done
export PATTERNS="$P 128x256x64,.*cluster=1x1,sched=coop 256x128x64,.*cluster=2x1,sched=coop"
export SHAPES="${SHAPES:-8192,6144,4096 4096,4096,4096 2048,4096,4096 4096,10240,8192 8192,8192,8192}"
for r in 1 2; do for b in build-base build-lead; do
  scripts/sm90_dev/side_by_side.sh $O/$b.$r $b > $O/sbs_$b.$r.txt 2>&1
done; done
cd $O && tar czf sbs.tgz build-base.* build-lead.* san.log && rm -rf build-base.* build-lead.* san.log && ls
