#!/usr/bin/env python3
"""Random GEMM problems that no test or suite lists, tuned end to end (sm90 + cuBLASLt, top 3 each, short timing);
every sm90 candidate must verify or be refused with a reason. Usage: sweep.py GEMMTUNE OUTDIR [N] [SEED]"""
import json, os, random, subprocess, sys

exe, out = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 36
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 14)
os.makedirs(out, exist_ok=True)
dims = [1, 3, 8, 24, 64, 72, 100, 128, 136, 200, 256, 264, 504, 777, 1000, 1032, 2048, 2056, 3000]
kdims = [1, 8, 16, 40, 64, 72, 100, 136, 520, 1000, 2048, 4104]
bad = 0
for i in range(n):
    m, nn, k = rng.choice(dims), rng.choice(dims), rng.choice(kdims)
    it = rng.choice(["bf16", "bf16", "f16"])
    ot = rng.choice([it, it, "f32", "bf16" if it == "f16" else "f16"])
    la, lb, ld = rng.choice(["row", "col"]), rng.choice(["row", "col"]), rng.choice(["row", "row", "col"])
    args = [exe, "tune", "--m", str(m), "--n", str(nn), "--k", str(k), "--A", f"{it}:{la}", "--B", f"{it}:{lb}",
            "--D", f"{ot}:{ld}", "--backends", "sm90,cublaslt", "--top-k", "3", "--min-time-ms", "1",
            "--min-iters", "2", "--warmup", "1", "--settle-ms", "0", "--no-cache", "--json", f"{out}/p{i}.json"]
    if rng.random() < 0.25:
        args += ["--batch", str(rng.choice([2, 3]))]
    r = rng.random()
    if r < 0.2:
        args += ["--alpha", "0.5", "--beta", "0.25"]
    elif r < 0.35:
        args += ["--epilogue", rng.choice(["bias", "bias,gelu_tanh", "relu", "bias,silu"])]
    desc = " ".join(args[2:20] + args[35:])
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    recs = []
    try:
        recs = json.load(open(f"{out}/p{i}.json"))
    except Exception:
        pass
    st = {}
    for rec in recs:
        key = (rec.get("backend") or rec.get("candidate", "?").split(":")[0], rec.get("status"))
        st[key] = st.get(key, 0) + 1
    flags = [r for r in recs if str(r.get("candidate", r.get("backend", ""))).startswith("sm90") and
             r.get("status") not in ("ok", "unsupported")]
    err = (p.stderr.strip().splitlines() or [""])[-1]
    verdict = "OK" if p.returncode == 0 and not flags else ("REFUSED" if p.returncode != 0 and not recs else "BAD")
    bad += verdict == "BAD"
    print(f"p{i:02d} {verdict:7s} rc={p.returncode} {desc}")
    print(f"     statuses {sorted(st.items())}")
    if p.returncode != 0 or flags:
        print(f"     last stderr: {err}")
        for f in flags:
            print(f"     FLAG {f.get('candidate')} {f.get('status')} {f.get('reason')}")
    with open(f"{out}/p{i}.log", "w") as f:
        f.write(" ".join(args) + "\n" + p.stdout + p.stderr)
print(f"{n} problems, {bad} with a flagged sm90 candidate or an unclean failure")
