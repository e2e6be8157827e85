#!/usr/bin/env python3
"""Joins side-by-side runs (ab_configs.sh's ab_MxNxK.txt files, one directory per run) into one table per shape:
each config's time in every run, as a ratio to the fastest cuBLASLt entry of the same run (< 1 = faster than cuBLAS's
best algorithm timed next to it).
  scripts/sm90_dev/sbs_table.py RUN_DIR...   (a run dir name like build-lead.1 labels its column)"""
import glob, os, re, sys
from collections import defaultdict

runs = sys.argv[1:]
data = defaultdict(lambda: defaultdict(dict))  # shape -> config -> run -> us
for r in runs:
    for f in glob.glob(os.path.join(r, "ab_*.txt")):
        shape = re.search(r"ab_(.*)\.txt", f).group(1)
        for line in open(f):
            t = line.split()
            if t and t[0] == "*": t = t[1:]
            if len(t) < 4 or t[0] not in ("sm90", "cublaslt") or t[-1] != "ok": continue
            data[shape][t[0] + ":" + t[1]][os.path.basename(r.rstrip("/"))] = float(t[-5])
labels = [os.path.basename(r.rstrip("/")) for r in runs]
for shape in sorted(data):
    best = {l: min((v[l] for c, v in data[shape].items() if c.startswith("cublaslt") and l in v), default=None)
            for l in labels}
    print(f"== {shape}  (cuBLASLt best us: " + " ".join(f"{l}={best[l]}" for l in labels) + ")")
    print(f"{'config':78s} " + " ".join(f"{l:>14s}" for l in labels))
    rows = []
    for c, v in data[shape].items():
        rat = [v[l] / best[l] if l in v and best[l] else None for l in labels]
        key = sum(x for x in rat if x) / max(1, sum(1 for x in rat if x))
        rows.append((key, c, rat))
    for key, c, rat in sorted(rows):
        short = re.sub(r",stages=64xAUTO,splitk=1,red=0,swizzle=0|,inner=0|x64,stages=\d|,raster=\w,group=\d+", "", c)
        print(f"{short[:78]:78s} " + " ".join(f"{x:14.3f}" if x else f"{'-':>14s}" for x in rat))
