#!/bin/bash
# Session 14 call 7: HEAD build (build-lead, carried) on problems no test lists: sweep.py, 36 random problems
# (ragged / tiny / odd K, all layouts, f16/bf16 in, f32/f16/bf16 out, batch, alpha/beta, epilogues), twice with
# different seeds; every sm90 candidate must verify or be refused with a reason.
OUT=$1
S=bench/results/2026-11-21-s14/scripts
python3 $S/sweep.py build-lead/gemmtune $OUT/sweep14 36 14 | tee $OUT/sweep14.txt
python3 $S/sweep.py build-lead/gemmtune $OUT/sweep15 36 15 | tee $OUT/sweep15.txt
tar czf $OUT/sweep_logs.tgz -C $OUT sweep14 sweep15 && rm -rf $OUT/sweep14 $OUT/sweep15
