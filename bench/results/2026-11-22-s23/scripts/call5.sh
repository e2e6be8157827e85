#!/usr/bin/env bash
# Session 23 device call 5 (HEAD): a random sweep, half of it decode-sized (1-16 tokens on M or N), through every
# backend (every candidate must verify or be refused with a reason); seed 23.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
timeout 560 python3 bench/results/2026-11-22-s23/scripts/sweep_decode.py build-lead/gemmtune $O/sweep 70 23 > $O/sweep.txt 2>&1
echo "sweep rc=$?"; grep -E "BAD|REFUSED|FLAG|problems" $O/sweep.txt | head -40
tar czf $O/sweep.tgz -C $O sweep && rm -rf $O/sweep
