#!/usr/bin/env python3
"""Read `gemmtune tune --top-k 0 --json FILE.json 2> FILE.log` (every enumerated candidate timed side by side) and
report how well the sm90 ranking did: the rank of the fastest sm90 candidate, the best time within the top k against
the best of all, and cuBLASLt's best. The JSON gives the ranking order per backend (the order `gemmtune list`
prints); the times are the first side-by-side pass from FILE.log, in which every candidate was timed under the same
conditions (the JSON's us_median of the runoff's members is the runoff's, which runs in another power state).

usage: rank_survey.py FILE.json... [--k 8] [--show 5]"""
import argparse, json, os, re, statistics


def first_pass(log):
    """candidate -> us of the first side-by-side pass, from a `tune` log (stderr)."""
    first = {}
    for line in open(log):
        m = re.match(r"\s+(\S+)\s+([0-9.]+) us\s+[0-9.]+ TFLOP/s", line)
        if m and m.group(1) not in first:
            first[m.group(1)] = float(m.group(2))
    return first


def print_losses(losses, k):
    """The summary line of a replay: the top-k loss against the best candidate, over problems."""
    if losses:
        print(f"top-{k} loss: median {100 * statistics.median(losses):.2f}%, max {100 * max(losses):.2f}%, "
              f"{sum(l > 0.01 for l in losses)} of {len(losses)} problems lose > 1%")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--show", type=int, default=0, help="print the N fastest sm90 candidates with their ranks")
    a = ap.parse_args()
    losses = []
    print(f"{'problem':34} {'n':>4} {'best':>8} {'rank':>4} {'top' + str(a.k):>8} {'loss%':>6} {'cublt':>8} "
          f"{'sm90/lt':>7}")
    for f in a.files:
        recs = json.load(open(f))
        first = first_pass(re.sub(r"\.json$", ".log", f))
        for r in recs:
            r["us_median"] = first.get(r["candidate"]) if r["status"] == "ok" else None
        sm = [r for r in recs if r["backend"] == "sm90"]
        lt = [r for r in recs if r["backend"] == "cublaslt" and r.get("us_median")]
        ok = [(i, r) for i, r in enumerate(sm) if r["status"] == "ok" and r.get("us_median")]
        if not ok:
            print(f"{os.path.basename(f):34} no sm90 result")
            continue
        bi, br = min(ok, key=lambda x: x[1]["us_median"])
        topk = min(r["us_median"] for i, r in ok if i < a.k)
        lt_best = min((r["us_median"] for r in lt), default=float("nan"))
        loss = topk / br["us_median"] - 1
        losses.append(loss)
        name = re.sub(r"\.json$", "", os.path.basename(f))
        print(f"{name:34} {len(sm):4d} {br['us_median']:8.2f} {bi + 1:4d} {topk:8.2f} {100 * loss:6.2f} {lt_best:8.2f} "
              f"{br['us_median'] / lt_best:7.3f}")
        if a.show:
            for i, r in sorted(ok, key=lambda x: x[1]["us_median"])[: a.show]:
                print(f"    #{i + 1:<4d} {r['us_median']:8.2f}  {r['config']}")
    print_losses(losses, a.k)


if __name__ == "__main__":
    main()
