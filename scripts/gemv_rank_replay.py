#!/usr/bin/env python3
"""Replay a gemv rank survey against today's ranking: for each `tune --backends gemv,... --top-k 0 --json FILE.json
2> FILE.log` (every gemv candidate timed side by side), ask `gemmtune list` (no GPU needed) for the gemv order of
the same problem and report the best first-pass time within its top k against the best gemv candidate timed, and
where the best sits in the order. Candidates the survey did not time (new ones) are counted as missing.

(FILE.log alone will do: the survey's stderr, named ..._MxNxK.log or ..._M_N_K.log.)

usage: gemv_rank_replay.py BUILD_DIR FILE.json... [--k 8] [--show 3]"""
import argparse, json, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rank_survey import first_pass, print_losses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--show", type=int, default=0)
    a = ap.parse_args()
    losses = []
    print(f"{'problem':26} {'n':>4} {'best':>8} {'rank':>4} {'top' + str(a.k):>8} {'loss%':>6} {'miss':>4} {'cublt':>8}")
    for f in a.files:
        first = first_pass(re.sub(r"\.json$", ".log", f))
        mm = re.search(r"_(\d+)[x_](\d+)[x_](\d+)", os.path.basename(f))
        cmd = [os.path.join(a.build, "gemmtune"), "list", "--m", mm.group(1), "--n", mm.group(2), "--k", mm.group(3),
               "--backends", "gemv", "--top-k", "0", "--arch-sms", "132"]
        env = dict(os.environ, LD_LIBRARY_PATH=a.build)
        order = [l.strip() for l in subprocess.run(cmd, capture_output=True, text=True, env=env).stdout.splitlines()
                 if l.startswith("gemv:")]
        timed = {c: t for c, t in first.items() if c.startswith("gemv:")}
        best_c = min(timed, key=timed.get)
        top = [timed[c] for c in order[: a.k] if c in timed]
        miss = sum(c not in timed for c in order[: a.k])
        lt = min((t for c, t in first.items() if c.startswith("cublaslt:")), default=float("nan"))
        rank = order.index(best_c) + 1 if best_c in order else -1
        loss = min(top) / timed[best_c] - 1 if top else float("nan")
        losses.append(loss)
        name = re.sub(r"\.(json|log)$", "", os.path.basename(f))
        print(f"{name:26} {len(order):4d} {timed[best_c]:8.2f} {rank:4d} {min(top) if top else float('nan'):8.2f} "
              f"{100 * loss:6.2f} {miss:4d} {lt:8.2f}")
        if a.show:
            for c in sorted(timed, key=timed.get)[: a.show]:
                r = order.index(c) + 1 if c in order else -1
                print(f"    #{r:<4d} {timed[c]:8.2f}  {c}")
    print_losses(losses, a.k)


if __name__ == "__main__":
    main()
