#!/usr/bin/env bash
# Session 22 device call 10 (final build): a random sweep of general GEMMs through every backend (every candidate
# must verify or be refused with a reason).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
timeout 540 python3 bench/results/2026-11-22-s22/scripts/sweep_general.py build-lead/gemmtune $O/sweep 60 22 > $O/sweep.txt 2>&1
echo "sweep rc=$?"; grep -E "BAD|REFUSED|FLAG|problems" $O/sweep.txt | head -40
tar czf $O/sweep.tgz -C $O sweep && rm -rf $O/sweep
