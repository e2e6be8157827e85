#!/usr/bin/env bash
# Session 18 device call 9: the final build's default enumeration (epi=warp now on 128x160 / 128x112 / 128x96 too,
# rings deep enough for 16-row pieces) on random problems no test lists: session 14's sweep.py (sm90 + cuBLASLt, top 3
# each), two new seeds.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_w
S=bench/results/2026-11-21-s14/scripts
for seed in 183 184; do
  timeout 280 python3 $S/sweep.py build-lead/gemmtune $O/sweep$seed 36 $seed > $O/sweep$seed.txt 2>&1
  echo "sweep$seed rc=$?"; grep -E "BAD|FLAG" $O/sweep$seed.txt | head; tail -1 $O/sweep$seed.txt
done
grep -h -o 'sm90:[^ ]*epi=warp' $O/sweep18*/p*.log 2>/dev/null | sort | uniq -c | sort -rn | head -8
tar czf $O/sweep_logs.tgz -C $O sweep183 sweep184 && rm -rf $O/sweep183 $O/sweep184
