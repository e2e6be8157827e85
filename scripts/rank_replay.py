#!/usr/bin/env python3
"""Replay a rank survey against the current ranking: for each `tune --top-k 0 --json FILE.json 2> FILE.log` of a
survey (scripts/rank_survey.py), ask `gemmtune list` (no GPU needed) for today's sm90 order of the same problem and
report the best first-pass time within its top k against the best of every candidate timed. Candidates the survey did
not time (new ones) are counted as missing.

usage: rank_replay.py BUILD_DIR FILE.json... [--k 8]"""
import argparse, os, re, statistics, subprocess

from rank_survey import first_pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--k", type=int, default=8)
    a = ap.parse_args()
    losses = []
    for f in a.files:
        log = re.sub(r"\.json$", ".log", f)
        first = first_pass(log)
        name = os.path.basename(f)[:-5]
        mm = re.search(r"_(\d+)x(\d+)x(\d+)", name)
        cmd = [os.path.join(a.build, "gemmtune"), "list", "--m", mm.group(1), "--n", mm.group(2), "--k", mm.group(3),
               "--backends", "sm90", "--top-k", "0", "--arch-sms", "132"] + EXTRA.get(name, [])
        env = dict(os.environ, LD_LIBRARY_PATH=a.build)
        order = [l.strip() for l in subprocess.run(cmd, capture_output=True, text=True, env=env).stdout.splitlines()
                 if l.startswith("sm90:")]
        best = min(t for c, t in first.items() if c.startswith("sm90:"))
        top = [first.get(c) for c in order[: a.k]]
        topt = min((t for t in top if t), default=float("nan"))
        lt = min((t for c, t in first.items() if c.startswith("cublaslt:")), default=float("nan"))
        loss = topt / best - 1
        losses.append(loss)
        print(f"{name:34} best {best:9.2f}  top{a.k} {topt:9.2f}  loss {100 * loss:5.2f}%  "
              f"untimed in top{a.k}: {sum(1 for t in top if t is None)}  cublaslt {lt:9.2f}")
    print(f"top-{a.k} loss: median {100 * statistics.median(losses):.2f}%, max {100 * max(losses):.2f}%, "
          f"{sum(l > 0.01 for l in losses)} of {len(losses)} problems lose > 1%")


# Problems of the surveys with more than m, n, k (their file names carry only the shape).
EXTRA = {
    "p14_4096x4096x4096": ["--A", "bf16:col"],
    "p15_4096x4096x4096": ["--A", "f16:row", "--B", "f16:col", "--D", "f32:row"],
    "s8_6000x4096x1024": ["--A", "bf16:col"],
}

if __name__ == "__main__":
    main()
