#!/usr/bin/env python3
"""Random GEMMs, half of them decode-sized (1-16 tokens on M or N), of every kind (ragged, all four layouts, batches,
C with beta, fused chains, padded rows) tuned end to end with every backend, top 4 each, short timing. Every
candidate of every backend must verify or be refused with a reason. Usage: sweep_decode.py GEMMTUNE OUTDIR [N] [SEED]"""
import json, os, random, subprocess, sys

exe, out = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 40
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 21)
os.makedirs(out, exist_ok=True)
dims = [1, 2, 5, 8, 13, 16, 31, 64, 100, 136, 333, 777, 1000, 1536, 2056, 3000, 4096, 5000, 8192]
small = [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16]
kdims = [1, 5, 8, 40, 64, 100, 520, 1000, 2048, 4104, 9000]
bad = 0
for i in range(n):
    while True:
        m, nn, k = rng.choice(dims), rng.choice(dims), rng.choice(kdims)
        if rng.random() < 0.5:  # decode-sized: the tokens on M or N (gemv and swap candidates)
            if rng.random() < 0.7:
                m = rng.choice(small)
            else:
                nn = rng.choice(small)
        if m * nn * k <= 3e10:
            break
    it = rng.choice(["bf16", "bf16", "f16"])
    ot = rng.choice([it, it, "f32"])
    la = rng.choice(["row", "row", "col"])
    lb = rng.choice(["col", "col", "row"])
    ld = rng.choice(["row", "row", "col"])
    args = [exe, "tune", "--m", str(m), "--n", str(nn), "--k", str(k), "--A", f"{it}:{la}", "--B", f"{it}:{lb}",
            "--D", f"{ot}:{ld}", "--top-k", "4", "--min-time-ms", "1", "--min-iters", "2", "--warmup", "1",
            "--settle-ms", "0", "--no-cache", "--json", f"{out}/p{i}.json"]
    if rng.random() < 0.3 and la == "row" and lb == "col":  # padded K-contiguous rows (16-byte multiples)
        args += ["--lda", str((k + 7) // 8 * 8 + 8), "--ldb", str((k + 7) // 8 * 8 + 16)]
    if rng.random() < 0.25:
        args += ["--batch", str(rng.choice([2, 3]))]
    r = rng.random()
    if r < 0.2:
        args += ["--alpha", "0.5", "--beta", "0.25"]
    elif r < 0.5:
        chains = ["bias", "bias,gelu_tanh", "relu", "bias,silu", "bias,residual", "row_scale,col_scale"]
        if nn % 2 == 0 and ld == "row":
            chains += ["silu_glu", "gelu_tanh_glu"]
        args += ["--epilogue", rng.choice(chains)]
    desc = " ".join(a for a in args[2:] if not a.startswith(out))
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    recs = []
    try:
        recs = json.load(open(f"{out}/p{i}.json"))
    except Exception:
        pass
    st = {}
    for rec in recs:
        key = (rec.get("backend", "?"), rec.get("status"))
        st[key] = st.get(key, 0) + 1
    flags = [r for r in recs if r.get("status") not in ("ok", "unsupported")]
    err = (p.stderr.strip().splitlines() or [""])[-1]
    verdict = "OK" if p.returncode == 0 and not flags else ("REFUSED" if p.returncode != 0 and not recs else "BAD")
    bad += verdict == "BAD"
    win = next((f"{r.get('backend')}:{r.get('config')}" for r in recs if r.get("winner")), "-")
    print(f"p{i:02d} {verdict:7s} rc={p.returncode} {desc} | winner {win}")
    print(f"     statuses {sorted(st.items())}")
    if p.returncode != 0 or flags:
        print(f"     last stderr: {err}")
        for f in flags:
            print(f"     FLAG {f.get('backend')}:{f.get('config')} {f.get('status')} {f.get('reason')}")
    with open(f"{out}/p{i}.log", "w") as f:
        f.write(" ".join(args) + "\n" + p.stdout + p.stderr)
print(f"{n} problems, {bad} with a flagged candidate or an unclean failure")
