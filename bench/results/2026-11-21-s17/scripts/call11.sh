#!/usr/bin/env bash
# Session 17 device call 11: the landed build on problems no test lists (session 14's sweep.py, new seeds: ragged
# dims whose row pitches are mostly off the 128-byte lines, so most maps take the 128-byte promotion), and memcheck on
# rows off the lines.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_w
S=bench/results/2026-11-21-s14/scripts
python3 $S/sweep.py build-lead/gemmtune $O/sweep17 36 17 > $O/sweep17.txt 2>&1; echo "sweep17 rc=$?"; tail -3 $O/sweep17.txt
python3 $S/sweep.py build-lead/gemmtune $O/sweep18 36 18 > $O/sweep18.txt 2>&1; echo "sweep18 rc=$?"; tail -3 $O/sweep18.txt
tar czf $O/sweep_logs.tgz -C $O sweep17 sweep18 && rm -rf $O/sweep17 $O/sweep18
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for cfg in "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp" \
           "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"; do
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 60 $SAN --tool memcheck --error-exitcode 9 build-lead/gemmtune tune \
    --config "sm90:$cfg" --m 1000 --n 1090 --k 1000 --lda 1000 --ldb 1032 --ldd 1096 \
    --in-process --no-cache --min-iters 1 --min-time-ms 0 --warmup 1 --settle-ms 0 < /dev/null > $O/san.log 2>&1
  echo "memcheck lda=1000 ldb=1032 $cfg: rc=$? $(grep -E "ERROR SUMMARY|winner" $O/san.log | tail -2 | tr '\n' ' ')"
done
gzip -f $O/san.log
