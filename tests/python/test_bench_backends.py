"""bench/backends.py without a GPU or a gemmtune build: a fake `gemmtune` (a small Python script with fixed
candidates, times and compile times) answers version / tune / compile as the CLI does, and the tables are checked
against numbers worked out by hand."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "bench", "backends.py")


def load_module():
    spec = importlib.util.spec_from_file_location("bench_backends", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bb = load_module()

# The fake CLI. Shapes are told apart by M: 512 has a bias epilogue that cuBLASLt cannot fuse (the reference falls
# back to epi=separate) and its `all` tune picks sm90 (as noise might), 768 makes the triton set fail.
FAKE = r'''
import json, os, sys
argv = sys.argv[1:]
if os.environ.get("FAKE_LOG"):
    with open(os.environ["FAKE_LOG"], "a") as fh:
        fh.write(json.dumps({"argv": argv, "cache": os.environ.get("GEMMTUNE_CACHE_DIR")}) + "\n")
CANDS = {"sm90": ["t1", "t2", "t3"], "gemv": ["g1"], "pad": ["p1"], "triton": ["b1", "b2"],
         "cublaslt": ["default", "algo=3"], "cutlass": ["c1", "c2"]}
US = {"sm90:t1": 10.0, "sm90:t2": 10.5, "sm90:t3": 11.0, "gemv:g1": 14.0, "pad:p1": 12.0, "triton:b1": 9.5,
      "triton:b2": 9.8, "cublaslt:default": 10.5, "cublaslt:algo=3": 10.2, "cublaslt:default,epi=separate": 11.0,
      "cutlass:c1": 9.0, "cutlass:c2": 9.2}
MS = {"sm90:t1": 300, "sm90:t2": 320, "sm90:t3": 340, "gemv:g1": 100, "pad:p1": 310, "triton:b1": 900,
      "triton:b2": 1100, "cutlass:c1": 60000, "cutlass:c2": 70000}
AVAILABLE = ["sm90", "gemv", "cublaslt", "pad", "triton"] + (["cutlass"] if os.environ.get("FAKE_CUTLASS") else [])

def opt(name):
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == name]

def cached(c):  # the kernel cache: a marker file per compiled candidate
    d = os.path.join(os.environ["GEMMTUNE_CACHE_DIR"], "kernels")
    os.makedirs(d, exist_ok=True)
    f = os.path.join(d, c.replace(":", "_").replace(",", "_"))
    hit = os.path.exists(f)
    open(f, "w").close()
    return hit

def record(c, status="ok"):
    backend, config = c.split(":", 1)
    ms = MS.get(c, 0)
    hit = cached(c) if ms else False
    return {"backend": backend, "config": config, "candidate": c, "status": status, "reason": "",
            "compile_ms": 0.2 if hit else ms, "compile_cache_hit": hit, "us_median": US[c] if status == "ok" else 0,
            "winner": False}

cmd = argv[0]
if cmd == "version":
    print("gemmtune 0.fake\nnvrtc    13.0\ncublaslt 13.0.0\nbackends " + ",".join(AVAILABLE))
    if "cutlass" not in AVAILABLE:
        print("         unavailable: cutlass: no CUTLASS headers (set CUTLASS_DIR)")
    print("gpu      FAKE H100 (sm_90a, 132 SMs, driver 1)")
    sys.exit(0)
if "--help" in argv:
    print("--config --backends --wait-compile")
    sys.exit(0)
if cmd == "tune" and os.environ.get("FAKE_NOGPU"):
    print("error: no GPU: no CUDA driver", file=sys.stderr)
    sys.exit(3)
m = int(opt("--m")[0])
backends = opt("--backends")[0].split(",") if opt("--backends") else AVAILABLE
out = opt("--json")[0]
if cmd == "compile":
    recs = []
    for b in backends:
        for cfg in CANDS[b]:
            c = b + ":" + cfg
            r = record(c, "ok" if b != "cublaslt" else "needs_gpu")
            if c == "sm90:t2":  # a twin of an earlier unit: a hit that must not count as a compile
                r.update({"compile_cache_hit": True, "compile_ms": 0.1})
            r["cache_hit"] = r.pop("compile_cache_hit")
            r["compiled"] = r["compile_ms"] > 1
            recs.append(r)
    wall = sum(r["compile_ms"] for r in recs) / 2
    json.dump({"threads": 2, "candidates": recs, "summary": {"wall_ms": wall}}, open(out, "w"))
    sys.exit(0)
configs = opt("--config")
if configs:
    if opt("--epilogue") and "cublaslt:default,epi=fused" in configs:
        print("error: --config 'cublaslt:default,epi=fused': cublaslt: cannot fuse bias here", file=sys.stderr)
        sys.exit(2)
    recs = [record(c) for c in configs]
else:
    if m == 768 and backends == ["triton"]:
        recs = [record("triton:" + c, "compile_error") for c in CANDS["triton"]]
        for r in recs:
            r["compile_ms"] = 700
        json.dump(recs, open(out, "w"))
        print("error: no candidate worked for the problem", file=sys.stderr)
        sys.exit(1)
    recs = []
    for b in backends:
        for c in CANDS[b]:
            k = b + ":" + c
            marker = os.path.join(os.environ["GEMMTUNE_CACHE_DIR"], "kernels", k.replace(":", "_"))
            if b == "cutlass" and "--wait-compile" not in argv and not os.path.exists(marker):
                recs.append({"backend": b, "config": c, "candidate": k, "status": "skipped", "compile_ms": 0,
                             "compile_cache_hit": False, "us_median": 0, "winner": False,
                             "reason": "not compiled yet (gemmtune compile, or --wait-compile)"})
            else:
                recs.append(record(k))
    recs = [r for r in recs if r["status"] == "ok"] + [r for r in recs if r["status"] != "ok"]
win = min((r for r in recs if r["status"] == "ok"), key=lambda r: r["us_median"])
if m == 512 and not configs and backends == AVAILABLE:
    win = recs[0]  # sm90:t1, though triton is faster
win["winner"] = True
json.dump(recs, open(out, "w"))
wall = 1000 + sum(r["compile_ms"] for r in recs if not r["compile_cache_hit"])
print("problem: fake\ndevice:  FAKE H100 (sm_90a, 132 SMs)")
print(f"winner: {win['candidate']}  {win['us_median']:.2f} us | cache miss | {len(recs)}/{len(recs)} ok | wall {wall:.0f} ms")
'''

SUITE = {"name": "fake", "dtype": "bf16", "shapes": [
    {"name": "a_256", "m": 256, "n": 256, "k": 256},
    {"name": "b_bias", "m": 512, "n": 256, "k": 256, "epilogue": "bias"},
    {"name": "c_broken", "m": 768, "n": 256, "k": 256},
    {"name": "d_1024", "m": 1024, "n": 256, "k": 256, "D": "f32:row", "lda": 300, "align_a": 8},
]}


@pytest.fixture()
def fake(tmp_path):
    exe = tmp_path / "gemmtune"
    exe.write_text(f"#!{sys.executable}\n" + FAKE)
    exe.chmod(0o755)
    suite = tmp_path / "fake.json"
    suite.write_text(json.dumps(SUITE))
    logf = tmp_path / "calls.jsonl"
    env = dict(os.environ, FAKE_LOG=str(logf))
    return {"exe": str(exe), "suite": str(suite), "out": str(tmp_path / "out"), "log": logf, "env": env,
            "tmp": tmp_path}


def run_script(fake, *args, check=True):
    r = subprocess.run([sys.executable, SCRIPT, "--gemmtune", fake["exe"], *args], capture_output=True, text=True,
                       env=fake["env"], timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def calls(fake):
    if not fake["log"].exists():
        return []
    return [json.loads(line) for line in fake["log"].read_text().splitlines()]


def test_select_shapes_spreads_evenly():
    shapes = [{"name": f"s{i}"} for i in range(10)]
    names = lambda xs: [s["name"] for s in xs]  # noqa: E731
    assert names(bb.select_shapes(shapes, "", 0)) == names(shapes)
    assert names(bb.select_shapes(shapes, "", 3)) == ["s0", "s4", "s9"] or \
        names(bb.select_shapes(shapes, "", 3)) == ["s0", "s5", "s9"]
    assert names(bb.select_shapes(shapes, "", 2)) == ["s0", "s9"]
    assert len(bb.select_shapes(shapes, "", 1)) == 1
    assert names(bb.select_shapes(shapes, "s1", 5)) == ["s1"]
    assert len(bb.select_shapes(shapes, "", 7)) == 7


def test_problem_flags_follow_the_suite_reader():
    suite = {"dtype": "f16", "B": "f16:row"}
    f = bb.problem_flags({"name": "x", "m": 8, "n": 16, "k": 32, "lda": 40, "align_a": 2, "epilogue": "bias,relu",
                          "amax": False}, suite)
    assert f[:6] == ["--m", "8", "--n", "16", "--k", "32"]
    pairs = dict(zip(f[::2], f[1::2]))
    assert pairs["--A"] == "f16:row" and pairs["--B"] == "f16:row" and pairs["--D"] == "f16:row"
    assert pairs["--lda"] == "40" and pairs["--align-a"] == "2" and pairs["--epilogue"] == "bias,relu"
    g = bb.problem_flags({"masked_m": 64, "groups": 8, "n": 16, "k": 32, "A": "e4m3:row", "B": "e4m3:col",
                          "scaling": "row", "amax": True}, {})
    assert "--masked-m" in g and "--groups" in g and g[-1] == "--amax" and "--scaling" in g
    with pytest.raises(ValueError, match="ldbb"):
        bb.problem_flags({"m": 1, "n": 1, "k": 1, "ldbb": 3}, {})


def test_cublas_reference_matches_bench():
    assert bb.cublas_reference({"m": 1, "n": 1, "k": 1}, {}) == ["cublaslt:default"]
    fp8 = {"A": "e4m3:row", "B": "e4m3:col"}
    assert bb.cublas_reference({**fp8, "scaling": "block"}, {}) == ["cublaslt:default,fast_accum=0"]
    assert bb.cublas_reference({**fp8, "scaling": "row"}, {}) == ["cublaslt:default,fast_accum=0"]
    assert bb.cublas_reference({**fp8, "scaling": "row", "fp8_accum": "fast"}, {}) == \
        ["cublaslt:default,fast_accum=1"]
    assert bb.cublas_reference({"B": "e4m3:col", "scaling": "row"}, {}) == ["cublaslt:default"]  # weight-only
    assert "--fp8-accum" in bb.problem_flags({"m": 1, "n": 1, "k": 1, **fp8, "fp8_accum": "fast"}, {})
    assert bb.cublas_reference({"epilogue": "bias"}, {}) == ["cublaslt:default,epi=fused",
                                                             "cublaslt:default,epi=separate"]


def test_parse_version_and_sets():
    v = bb.parse_version("gemmtune 1.2\nbackends sm90,gemv\n         unavailable: triton: no module named triton\n")
    assert v["version"] == "1.2" and v["backends"] == ["sm90", "gemv"]
    assert v["unavailable"] == {"triton": "no module named triton"}
    sets = bb.parse_sets("sm90+gemv, triton ,all")
    assert [s["name"] for s in sets] == ["sm90+gemv", "triton", "all"] and sets[2]["backends"] is None
    assert "unavailable" in bb.unavailable_reason(sets[1], v)
    assert bb.unavailable_reason(sets[0], v) == "" and bb.unavailable_reason(sets[2], v) == ""
    assert "unknown backend" in bb.unavailable_reason({"backends": ["nope"]}, v)
    with pytest.raises(ValueError):
        bb.parse_sets("sm90++gemv")


def test_tune_run_end_to_end(fake):
    r = run_script(fake, "--suite", fake["suite"], "--out", fake["out"])
    raw = json.load(open(os.path.join(fake["out"], "backends-fake.json")))
    md = open(os.path.join(fake["out"], "backends-fake.md")).read()
    assert [s["name"] for s in raw["shapes"]] == ["a_256", "b_bias", "c_broken", "d_1024"]
    assert "[4/4] d_1024 all: ok" in r.stderr  # progress on stderr

    # every set's tune ran cold in a cache directory of its own; the side-by-side run compiled nothing again
    tunes = [c for c in calls(fake) if c["argv"][0] == "tune" and "--config" not in c["argv"] and
             "--help" not in c["argv"]]
    assert len(tunes) == 4 * 4  # 4 shapes x 4 available sets (cutlass is unavailable)
    assert len({c["cache"] for c in tunes}) == len(tunes)
    assert all("--force" in c["argv"] for c in tunes)
    for row in raw["shapes"]:
        assert row["sets"]["cutlass"]["status"] == "unavailable"
        for name, rec in row["sets"].items():
            assert not any(x.get("compile_cache_hit") for x in rec.get("results", [])), (row["name"], name)
        sbs = row["side_by_side"]
        assert sbs["status"] == "ok"
        assert all(x["compile_cache_hit"] for x in sbs["results"] if x["compile_ms"])
    assert "--wait-compile" not in sum((c["argv"] for c in tunes), [])  # no set holds cutlass: not asked for

    a = bb.shape_summary(raw["shapes"][0], [s["name"] for s in raw["sets"]])
    assert a["cublas_us"] == 10.5
    assert a["sets"]["triton"]["us"] == 9.5 and a["sets"]["triton"]["x_cublas"] == pytest.approx(10.5 / 9.5)
    assert a["sets"]["sm90+gemv+pad"]["winner"] == "sm90:t1"
    assert a["sets"]["cublaslt"]["winner"] == "cublaslt:algo=3"
    assert a["fastest_set"] == "triton" and a["all_ok"] and a["flag"] is None

    b = raw["shapes"][1]
    assert b["side_by_side"]["reference"] == "cublaslt:default,epi=separate"  # the fused one was refused
    assert "cublaslt:default,epi=fused" in b["side_by_side"]["dropped"]
    bs = bb.shape_summary(b, [s["name"] for s in raw["sets"]])
    assert bs["cublas_us"] == 11.0 and not bs["all_ok"] and "triton" in bs["flag"]

    c = bb.shape_summary(raw["shapes"][2], [s["name"] for s in raw["sets"]])
    assert c["sets"]["triton"]["status"] == "error" and "no candidate worked" in c["sets"]["triton"]["error"]
    assert c["sets"]["all"]["us"] == 9.5  # one set's failure leaves the others' numbers alone

    # the table: a row per shape, geomeans, the flagged shape, the failure, the compile medians
    assert "| a_256 | 10.50 | 10.00 (1.050) | 9.50 (1.105) | unavailable | 10.20 (1.029) | 9.50 (1.105) | triton" \
        " | yes |" in md
    assert "| b_bias | 11.00 |" in md and "| NO |" in md
    assert "- b_bias: all slower than triton (1.053x its µs)" in md
    assert "3 of 4 shapes" in md
    g = (10.5 / 9.5) ** 3 * (11.0 / 9.5)
    assert f"× {g ** 0.25:.3f} (4 shapes)" not in md  # triton has 3 shapes: c_broken failed
    assert f"× {((10.5 / 9.5) ** 2 * (11.0 / 9.5)) ** (1 / 3):.3f} (3 shapes)" in md
    assert "- c_broken triton: error: tune: error: no candidate worked" in md
    assert "- c_broken triton: 2 of 2 candidates failed: compile_error 2; first: triton:b1" in md
    rows = {(r["set"], r["backend"]): r for r in bb.compile_table(raw)}
    assert rows[("sm90+gemv+pad", "sm90")]["compiles"] == 12 and rows[("sm90+gemv+pad", "sm90")]["median_ms"] == 320
    assert rows[("triton", "triton")]["compiles"] == 3 * 2  # c_broken's compile errors have no compile time
    assert rows[("triton", "triton")]["median_ms"] == 1000
    assert rows[("triton", "triton")]["shapes"] == 3  # the failed shape's wall is not a tune wall
    assert rows[("sm90+gemv+pad", "sm90")]["wall_median_s"] == pytest.approx(2.37)
    assert ("cublaslt", "-") in rows  # cuBLASLt compiles nothing
    assert "| sm90+gemv+pad | sm90 | 12 | 320 | 300 | 340 | 2.4 | 2.4 | 4 |" in md

    # --report prints the same tables again, without running anything
    n = len(calls(fake))
    rep = run_script(fake, "--report", os.path.join(fake["out"], "backends-fake.json"))
    assert rep.stdout == md and len(calls(fake)) == n

    # --resume keeps the shapes written and runs nothing more: 16 set tunes, 4 side by side, 1 retry of b_bias's
    # without the refused fused reference
    def n_tunes():
        return len([c for c in calls(fake) if c["argv"][0] == "tune" and "--help" not in c["argv"]])
    assert n_tunes() == 16 + 4 + 1
    r = run_script(fake, "--suite", fake["suite"], "--out", fake["out"], "--resume")
    assert n_tunes() == 16 + 4 + 1 and "--resume: 4 shapes already" in r.stderr


def test_stop_after_and_resume(fake):
    r = run_script(fake, "--suite", fake["suite"], "--out", fake["out"], "--sets", "triton", "--stop-after", "3")
    assert "1 shapes left" in r.stderr
    raw_path = os.path.join(fake["out"], "backends-fake.json")
    assert [s["name"] for s in json.load(open(raw_path))["shapes"]] == ["a_256", "b_bias", "c_broken"]
    run_script(fake, "--suite", fake["suite"], "--out", fake["out"], "--sets", "triton", "--stop-after", "3",
               "--resume")
    assert [s["name"] for s in json.load(open(raw_path))["shapes"]] == ["a_256", "b_bias", "c_broken", "d_1024"]
    r = run_script(fake, "--suite", fake["suite"], "--out", fake["out"], "--compile-only", "--resume",
                   "--sets", "triton")
    assert r.returncode == 0  # a compile run writes its own file: nothing to resume from
    assert os.path.exists(os.path.join(fake["out"], "backends-fake-compile.json"))


def test_inductor_columns(fake):
    run_script(fake, "--suite", fake["suite"], "--out", fake["out"], "--sets", "triton,all", "--max-shapes", "2")
    raw_path = os.path.join(fake["out"], "backends-fake.json")
    raw = json.load(open(raw_path))
    assert [s["name"] for s in raw["shapes"]] == ["a_256", "d_1024"]
    rows = [{"name": "a_256", "eager_us": 10.0, "compile_us": 9.0, "autotune_s": 30.0, "inductor_pick": "aten"},
            {"name": "d_1024", "eager_us": 10.0, "compile_us": 12.0, "autotune_s": 50.0}]
    for timing, ind_us, behind in (("median of per-launch CUDA events over rotated input sets", 9.0, True),
                                   ("triton.testing.do_bench median (256 MB memset between runs)", 9.45, False)):
        ind = {"meta": {"timing": timing}, "results": rows}
        p = fake["tmp"] / "ind.json"
        p.write_text(json.dumps(ind))
        s = bb.shape_summary(raw["shapes"][0], ["triton", "all"], rows[0], timing.startswith("median of per"))
        assert s["inductor_us"] == pytest.approx(ind_us)
        assert s["all_vs_inductor"] == pytest.approx(ind_us / 9.5)
        assert s["inductor_x_cublas"] == pytest.approx(10.0 / 9.0)
        md = run_script(fake, "--report", raw_path, "--inductor-json", str(p)).stdout
        assert ("a_256 0.947" in md) == behind
        assert "Inductor max-autotune (torch_baseline.py)" in md
        assert "| 40.0 | 50.0 | 2 |" in md  # median and max of autotune_s over the shapes run
        assert ("* bridged" in md) == (not behind)


def test_compile_only(fake):
    r = run_script(fake, "--suite", fake["suite"], "--out", fake["out"], "--compile-only", "--sets",
                   "sm90+gemv,triton,cutlass,all", "--filter", "a_")
    raw = json.load(open(os.path.join(fake["out"], "backends-fake-compile.json")))
    md = open(os.path.join(fake["out"], "backends-fake-compile.md")).read()
    assert raw["mode"] == "compile" and len(raw["shapes"]) == 1
    comps = [c for c in calls(fake) if c["argv"][0] == "compile"]
    assert len(comps) == 3 and all("--no-cache" in c["argv"] for c in comps)
    # `all` compiles every backend this gemmtune has, cuBLASLt (nothing to compile) included
    assert comps[-1]["argv"][comps[-1]["argv"].index("--backends") + 1] == "sm90,gemv,cublaslt,pad,triton"
    rows = {(x["set"], x["backend"]): x for x in bb.compile_table(raw)}
    assert rows[("sm90+gemv", "sm90")]["compiles"] == 2  # the cache hit is left out
    assert rows[("sm90+gemv", "sm90")]["median_ms"] == 320 and rows[("sm90+gemv", "sm90")]["threads"] == "2"
    assert rows[("sm90+gemv", "sm90")]["wall_median_s"] == pytest.approx((300 + 0.1 + 340 + 100) / 2e3)
    assert rows[("triton", "triton")]["median_ms"] == 1000
    assert "| cutlass | unavailable | 0 |" in md and "Unavailable here: cutlass (no CUTLASS headers" in md
    assert "a_256 cutlass" not in md  # named once, not per shape
    assert "needs_gpu" not in md  # cuBLASLt's candidates reach no compiler: not failures
    assert "compile wall s" in md and "Speed" not in md
    assert "sm90+gemv: ok" in r.stderr


def test_bad_arguments(fake):
    r = run_script(fake, "--suite", fake["suite"], "--sets", "a++b", check=False)
    assert r.returncode == 2 and "empty backend name" in r.stderr
    r = subprocess.run([sys.executable, SCRIPT, "--gemmtune", str(fake["tmp"] / "nope"), "--suite", fake["suite"]],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no such file" in r.stderr
    fake["env"]["FAKE_NOGPU"] = "1"
    r = run_script(fake, "--suite", fake["suite"], "--out", fake["out"], check=False)
    assert r.returncode == 1 and "no GPU" in r.stderr and "--compile-only" in r.stderr
    assert len([c for c in calls(fake) if c["argv"][0] == "tune" and "--help" not in c["argv"]]) == 1
    r = run_script(fake, "--suite", fake["suite"], "--filter", "zzz", "--out", fake["out"], check=False)
    assert r.returncode != 0 and "no shape matches" in r.stderr


@pytest.mark.parametrize("mode", ["wait", "prebuild"])
def test_cutlass_wait_or_prebuild(fake, mode):
    fake["env"]["FAKE_CUTLASS"] = "1"
    run_script(fake, "--suite", fake["suite"], "--out", fake["out"], "--sets", "sm90,cutlass,all", "--filter", "a_",
               "--cutlass", mode)
    raw = json.load(open(os.path.join(fake["out"], "backends-fake.json")))
    md = open(os.path.join(fake["out"], "backends-fake.md")).read()
    c = calls(fake)
    def set_of(argv):
        return (argv[argv.index("--backends") + 1],) if "--backends" in argv else ("all",)
    tunes = {set_of(x["argv"]): x["argv"] for x in c
             if x["argv"][0] == "tune" and "--config" not in x["argv"] and "--help" not in x["argv"]}
    prebuilds = [x for x in c if x["argv"][0] == "compile"]
    row = raw["shapes"][0]
    assert row["sets"]["cutlass"]["winner"] == "cutlass:c1" and row["sets"]["all"]["winner"] == "cutlass:c1"
    assert bb.shape_summary(row, ["sm90", "cutlass", "all"])["sets"]["all"]["us"] == 9.0
    rows = {(r["set"], r["backend"]): r for r in bb.compile_table(raw)}
    if mode == "wait":
        assert "--wait-compile" in tunes[("cutlass",)] and "--wait-compile" in tunes[("all",)]
        assert "--wait-compile" not in tunes[("sm90",)]
        assert not prebuilds
        assert rows[("cutlass", "cutlass")]["compiles"] == 2 and rows[("cutlass", "cutlass")]["median_ms"] == 65000
        assert rows[("cutlass", "cutlass")]["wall_median_s"] == pytest.approx(1 + 130)
    else:
        assert not any("--wait-compile" in a for a in tunes.values())
        assert len(prebuilds) == 1 and prebuilds[0]["argv"][prebuilds[0]["argv"].index("--backends") + 1] == "cutlass"
        # the cutlass sets started from the prebuilt kernels: no cold CUTLASS compile inside their tunes
        assert ("cutlass", "cutlass") not in rows and ("all", "cutlass") not in rows
        pre = rows[("cutlass prebuild (gemmtune compile)", "cutlass")]
        assert pre["compiles"] == 2 and pre["median_ms"] == 65000 and pre["wall_median_s"] == pytest.approx(65)
        assert "| cutlass prebuild (gemmtune compile) | cutlass | 2 | 65000 |" in md


def test_torch_baseline_self_test():
    # bench/torch_baseline.py over every suite file (operand views, fp8 scale geometry, the report), without a GPU.
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "torch_baseline.py"), "--self-test"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "self-test: ok" in r.stdout, r.stdout + r.stderr


def test_llama_e2e_self_test():
    # bench/llama_e2e.py's table (graphed modes against graphed eager included), without a GPU or transformers.
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "llama_e2e.py"), "--self-test"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "self-test: ok" in r.stdout, r.stdout + r.stderr
