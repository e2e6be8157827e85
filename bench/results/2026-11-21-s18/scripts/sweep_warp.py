#!/usr/bin/env python3
"""Random problems through every epi=warp strip form (session 18's sector-aligned strips): 16-row and 8-row pieces,
tails of 96 / 80 / 64 / 32 bytes and none, a row shorter than 128 bytes, ping-pong and cooperative, stream-K tail.
Each problem is tuned with the configs its checks accept (a refused --config is dropped and the run repeated); every
candidate that runs must verify. Usage: sweep_warp.py GEMMTUNE OUTDIR [N] [SEED]"""
import json, os, random, re, subprocess, sys

exe, out = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 18)
os.makedirs(out, exist_ok=True)
CONFIGS = [
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp",
    "tile=128x160x64,stages=5,cluster=1x1,sched=pingpong,raster=n,group=8,epi=warp",
    "tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6,epi=warp",
    "tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp",
    "tile=64x176x64,stages=6,cluster=1x1,sched=pingpong,raster=n,group=8,epi=warp",
    "tile=64x48x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=8,epi=warp",
    "tile=128x96x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp",
    "tile=128x208x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8,epi=warp",
    "tile=256x112x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4,epi=warp",
    "tile=128x128x64,stages=6,cluster=2x1,sched=coop,raster=m,group=8,tail=sk,epi=warp",
]
dims = [1, 8, 24, 72, 100, 136, 200, 264, 504, 777, 1000, 1032, 1096, 2056, 3000]
kdims = [8, 40, 64, 100, 520, 1000, 2048]
bad = ran_total = 0
for i in range(n):
    m, nn, k = rng.choice(dims), rng.choice(dims), rng.choice(kdims)
    it = rng.choice(["bf16", "bf16", "f16"])
    ot = rng.choice([it, it, "f32"])
    la, lb, ld = rng.choice(["row", "col"]), rng.choice(["row", "col", "col"]), rng.choice(["row", "row", "col"])
    prob = ["--m", str(m), "--n", str(nn), "--k", str(k), "--A", f"{it}:{la}", "--B", f"{it}:{lb}", "--D", f"{ot}:{ld}"]
    # Leading dimensions padded to 16 bytes where the packed ones are not (the CLI refuses those by name).
    def pad(rows_major, r, c, t):
        e = 4 if t == "f32" else 2
        inner = c if rows_major else r
        return (inner * e + 15) // 16 * 16 // e
    prob += ["--lda", str(pad(la == "row", m, k, it)), "--ldb", str(pad(lb == "row", k, nn, it)),
             "--ldd", str(pad(ld == "row", m, nn, ot))]
    if rng.random() < 0.25:
        prob += ["--batch", str(rng.choice([2, 3]))]
    r = rng.random()
    if r < 0.2:
        prob += ["--alpha", "0.5", "--beta", "0.25", "--C", f"{ot}:{ld}", "--ldc", str(pad(ld == "row", m, nn, ot))]
    elif r < 0.4:
        prob += ["--epilogue", rng.choice(["bias", "bias,gelu_tanh", "relu", "bias,silu"])]
    cfgs = list(CONFIGS)
    refused = []
    while True:
        args = [exe, "tune"] + prob + [a for c in cfgs for a in ("--config", "sm90:" + c)] + [
            "--min-time-ms", "1", "--min-iters", "2", "--warmup", "1", "--settle-ms", "0", "--no-cache",
            "--json", f"{out}/p{i}.json"]
        if not cfgs:
            break
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        mm = re.search(r"--config 'sm90:([^']+)': (.*)", p.stderr)
        if p.returncode != 0 and mm and mm.group(1) in cfgs:
            cfgs.remove(mm.group(1))
            refused.append(mm.group(2)[:90])
            continue
        break
    desc = " ".join(prob)
    if not cfgs:
        print(f"p{i:02d} NONE    {desc}\n     (every config refused: {refused[:2]})")
        continue
    recs = []
    try:
        recs = json.load(open(f"{out}/p{i}.json"))
    except Exception:
        pass
    st = {}
    for rec in recs:
        st[rec.get("status")] = st.get(rec.get("status"), 0) + 1
    flags = [r for r in recs if r.get("status") not in ("ok",)]
    ok = p.returncode == 0 and not flags and len(recs) == len(cfgs)
    bad += not ok
    ran_total += st.get("ok", 0)
    print(f"p{i:02d} {'OK' if ok else 'BAD':7s} rc={p.returncode} ran {st.get('ok', 0)}/{len(cfgs)} {desc}")
    if not ok:
        print(f"     last stderr: {(p.stderr.strip().splitlines() or [''])[-1]}")
        for f in flags:
            print(f"     FLAG {f.get('config')} {f.get('status')} {f.get('reason')}")
    with open(f"{out}/p{i}.log", "w") as f:
        f.write(" ".join(args) + "\n" + p.stdout + p.stderr)
print(f"{n} problems, {ran_total} candidate runs verified, {bad} with a failed candidate or an unclean exit")
