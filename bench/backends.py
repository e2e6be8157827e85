#!/usr/bin/env python3
r"""Every backend alone and all together, per shape of a suite: speed side by side and compile time (GPU host).

For each shape of --suite (after --filter and --max-shapes):
  a. for each backend set of --sets (default sm90+gemv+pad, triton, cutlass, cublaslt, all): a cold
     `gemmtune tune --backends ... --json FILE --force` in a fresh GEMMTUNE_CACHE_DIR (kernel cache and result cache
     empty, so every compile is a real one), recording the set's winner, its µs, the tune wall (the report's, and the
     process's) and, per backend, the compile_ms of each candidate compiled cold (compile_cache_hit false).
     CUTLASS kernels take nvcc tens of seconds each: --cutlass wait (default) passes --wait-compile, so the cold tune
     wall includes them; --cutlass prebuild first runs `gemmtune compile --backends cutlass` for the shape into a
     cache that the cutlass and all sets then start from, and records that compile time on its own; that cache is
     kept for the run (a prebuilt cache, as `gemmtune compile --suite` leaves one), so a shape compiles only the
     CUTLASS kernels no earlier shape built (a kernel serves every shape of its dtypes, layouts and epilogue).
  b. ONE `gemmtune tune --config W1 --config W2 ... --json --force` of every set's winner and cuBLASLt's default
     (the reference `gemmtune bench` times: cublaslt:default, fast_accum=0|1 as the fp8 problem's fp8_accum,
     epi=fused or epi=separate with an epilogue), timed interleaved on the same buffers: every µs of a row comes
     from one process on one GPU.
  c. OUT/backends-<suite>.json (everything raw, written after each shape: --resume goes on from there) and .md: per
     shape each set's µs and × cuBLAS (cuBLASLt default µs / set µs), the fastest single set, whether `all` is at
     least as fast as every single set (a row where it is slower by more than 1% is flagged), the geomeans, and the
     compile-time table: per backend the median compile per candidate (cold), candidates compiled, the cold tune wall
     per shape (median and max over shapes). --inductor-json (bench/torch_baseline.py's JSON of the same suite) adds
     Inductor max-autotune's µs (absolute when torch_baseline timed with --timing rotate, as gemmtune does; else
     bridged: our cuBLASLt default µs × Inductor µs ÷ F.linear µs, each harness's cuBLAS the anchor) and its cold
     compile + autotune time per shape.
  --compile-only (no GPU needed): `gemmtune compile --backends ... --json --no-cache` per set and shape instead, the
     same compile-time table (wall per shape and threads used): the "2-core host" column.
  --report RAW.json prints the tables of an earlier run again (with --inductor-json: Inductor's columns too).
Under a time limit per command: --resume --stop-after N runs N more shapes per call, the tables each time.
Standard library only; the tables reuse bench/torch_baseline.py's geomean (imported when a table is made; that
script imports torch only for its own GPU run).

  python3 bench/backends.py --suite bench/suites/large.json --max-shapes 6 --out OUT
  python3 bench/backends.py --suite bench/suites/unaligned.json --cutlass prebuild --resume --out OUT
  python3 bench/backends.py --suite bench/suites/smoke.json --compile-only --sets sm90+gemv,triton --out OUT
  python3 bench/backends.py --report OUT/backends-large.json --inductor-json OUT/torch_large.json
"""
import argparse
import atexit
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT_SETS = "sm90+gemv+pad,triton,cutlass,cublaslt,all"
NOISE = 0.01  # `all` slower than a single set by more than this fraction is flagged
# Statuses of a candidate that never reached its compiler: no compile time to count.
NOT_COMPILED = {"unsupported", "needs_gpu", "skipped", "pending"}
# A compile that failed stopped early (often in the front end): its time is no compile time either.
NO_COMPILE_TIME = NOT_COMPILED | {"compile_error"}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# suites and problems


def select_shapes(shapes, name_filter="", max_shapes=0):
    """The shapes whose name contains name_filter, then at most max_shapes of them spread evenly over the suite's
    order (first and last included), so a subset still covers the suite's range of sizes."""
    shapes = [s for s in shapes if name_filter in s.get("name", "")]
    n = len(shapes)
    if max_shapes <= 0 or max_shapes >= n:
        return shapes
    if max_shapes == 1:
        return [shapes[n // 2]]
    picks = sorted({round(i * (n - 1) / (max_shapes - 1)) for i in range(max_shapes)})
    return [shapes[i] for i in picks]


def shape_name(shape):
    """A suite entry's name, or the one `gemmtune bench` gives an unnamed entry (tools/gemmtune/cli_suite.h)."""
    if shape.get("name"):
        return shape["name"]
    if "masked_m" in shape:
        return f"{shape['masked_m']}x{shape['n']}x{shape['k']}_g{shape.get('groups', 1)}_masked"
    if "groups" in shape:
        return f"{shape['m']}x{shape['n']}x{shape['k']}_g{shape['groups']}"
    return f"{shape['m']}x{shape['n']}x{shape['k']}"


_FLAG_KEYS = ("m", "masked_m", "groups", "n", "k", "batch", "A", "B", "C", "D", "lda", "ldb", "ldc", "ldd", "align_a",
              "align_b", "align_c", "align_d", "alpha", "beta", "epilogue", "scaling", "fp8_accum")


def problem_flags(shape, suite):
    """The command-line options of a suite entry as `gemmtune bench --suite` reads it (cli_suite.h): A, B and D
    default to the suite's "A"/"B"/"D", else its "dtype" (bf16) row / col / row."""
    dt = suite.get("dtype", "bf16")
    s = dict(shape)
    for w, layout in (("A", "row"), ("B", "col"), ("D", "row")):
        s.setdefault(w, suite.get(w, f"{dt}:{layout}"))
    unknown = set(s) - set(_FLAG_KEYS) - {"name", "amax"}
    if unknown:
        raise ValueError(f"shape '{shape_name(shape)}': unknown keys {sorted(unknown)}")
    flags = []
    for key in _FLAG_KEYS:
        if key in s and s[key] not in ("", None):
            flags += ["--" + key.replace("_", "-"), str(s[key])]
    if s.get("amax"):
        flags.append("--amax")
    return flags


def cublas_reference(shape, suite):
    """cuBLASLt's default as `gemmtune bench` times it (src/tuner/bench.cpp), fused epilogue first: the config with
    epi=separate is the fallback when cuBLASLt refuses the fused one."""
    dt = suite.get("dtype", "bf16")
    a = shape.get("A", suite.get("A", f"{dt}:row")).split(":")[0].lower()
    b = shape.get("B", suite.get("B", f"{dt}:col")).split(":")[0].lower()
    algo = "default"
    if a in ("e4m3", "e5m2") and b in ("e4m3", "e5m2"):  # in the problem's accumulation mode
        algo = "default,fast_accum=1" if shape.get("fp8_accum") == "fast" else "default,fast_accum=0"
    ep = shape.get("epilogue", "")
    if ep and ep != "none":
        return [f"cublaslt:{algo},epi=fused", f"cublaslt:{algo},epi=separate"]
    return [f"cublaslt:{algo}"]


def parse_sets(text):
    """"sm90+gemv+pad,triton,all" -> [{"name", "backends": [...] or None (all)}]."""
    sets = []
    for name in (t.strip() for t in text.split(",")):
        if not name:
            continue
        if name == "all":
            sets.append({"name": "all", "backends": None})
        else:
            backends = [b.strip() for b in name.split("+")]
            if not all(backends):
                raise ValueError(f"--sets: empty backend name in '{name}'")
            sets.append({"name": name, "backends": backends})
    if not sets:
        raise ValueError("--sets: no set given")
    return sets


def set_has(s, backend):
    return s["backends"] is None or backend in s["backends"]


# ---------------------------------------------------------------------------------------------------------------
# reading gemmtune's output


def tune_records(doc):
    """The per-candidate records of a `gemmtune tune --json` document: an array of records (tools/gemmtune
    cli_output.h to_json), or an object holding them under "results" (or "candidates")."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for key in ("results", "candidates"):
            if isinstance(doc.get(key), list):
                return doc[key]
    return []


def cand_str(r):
    return r.get("candidate") or f"{r.get('backend', '?')}:{r.get('config', '?')}"


def cold_compiles(records):
    """{backend: [compile_ms, ...]} of the candidates compiled from scratch (cache misses that compiled).
    Works for `tune --json` records (compile_cache_hit) and `compile --json` ones (cache_hit, compiled)."""
    out = {}
    for r in records:
        hit = r.get("compile_cache_hit", r.get("cache_hit", False))
        ms = r.get("compile_ms") or 0
        if hit or ms <= 0 or r.get("status") in NO_COMPILE_TIME or r.get("compiled") is False:
            continue
        out.setdefault(r.get("backend", "?"), []).append(float(ms))
    return out


def failed_candidates(records):
    """One line for the candidates of a run that failed (statuses counted, the first reason), or "". A spilled
    candidate is a reject, and one the backend never got to compile (unsupported, needs a GPU) is no failure."""
    bad = [r for r in records if r.get("status") not in {"ok", "spills"} | NOT_COMPILED]
    if not bad:
        return ""
    counts = {}
    for r in bad:
        counts[r.get("status", "?")] = counts.get(r.get("status", "?"), 0) + 1
    first = ((bad[0].get("reason") or "").strip().splitlines() or [""])[0][:300]
    return (f"{len(bad)} of {len(records)} candidates failed: "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f"; first: {cand_str(bad[0])}: {first}")


def parse_wall_ms(text):
    """The report's wall time from `gemmtune tune`'s summary line ("... | wall 1234 ms")."""
    m = re.findall(r"\|\s*wall\s+([0-9.]+)\s*ms", text or "")
    return float(m[-1]) if m else None


def parse_device(text):
    m = re.search(r"^device:\s+(.+)$", text or "", re.M)
    return m.group(1).strip() if m else None


def parse_version(text):
    """`gemmtune version` -> {"version", "backends": [...available], "unavailable": {name: why}, "gpu"}."""
    info = {"text": text, "backends": [], "unavailable": {}}
    for line in (text or "").splitlines():
        if line.startswith("gemmtune "):
            info["version"] = line.split(None, 1)[1].strip()
        elif line.startswith("backends "):
            info["backends"] = [b for b in line.split(None, 1)[1].strip().split(",") if b]
        elif line.strip().startswith("unavailable:"):
            name, _, why = line.split(":", 1)[1].strip().partition(":")
            info["unavailable"][name.strip()] = why.strip()
        elif line.startswith("gpu "):
            info["gpu"] = line.split(None, 1)[1].strip()
    return info


def usage_error_config(stderr):
    """The --config a usage error names ("error: --config 'X': why"), or None."""
    m = re.search(r"--config '([^']+)'", stderr or "")
    return m.group(1) if m else None


# ---------------------------------------------------------------------------------------------------------------
# running gemmtune


class Runner:
    """Runs the gemmtune CLI with a given cache directory and reads its JSON output."""

    def __init__(self, exe, timeout_s, verbose=False, extra=()):
        self.exe, self.timeout_s, self.verbose, self.extra = exe, timeout_s, verbose, list(extra)

    def run(self, args, cache_dir=None, json_path=None):
        env = dict(os.environ)
        if cache_dir:
            env["GEMMTUNE_CACHE_DIR"] = cache_dir
            # Triton keeps a cache of its own (~/.triton/cache): a fresh one too, or its compiles would not be cold.
            # Beside gemmtune's cache, not in it, whose layout is gemmtune's.
            env["TRITON_CACHE_DIR"] = cache_dir.rstrip("/") + "-triton"
            os.makedirs(env["TRITON_CACHE_DIR"], exist_ok=True)
        cmd = [self.exe] + args
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=self.timeout_s)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc = "timeout"
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        except OSError as e:
            rc, out, err = "oserror", "", str(e)
        wall = time.perf_counter() - t0
        if self.verbose and err:
            sys.stderr.write(err)
        doc = None
        if json_path and os.path.exists(json_path):
            try:
                with open(json_path) as fh:
                    doc = json.load(fh)
            except (OSError, ValueError) as e:
                err += f"\n(bench/backends.py: cannot read {json_path}: {e})"
        return {"cmd": cmd, "rc": rc, "wall_s": wall, "stdout": out, "stderr": err, "json": doc}


def failure(res, what):
    """One line for a command that failed: its last error line, or how it ended."""
    lines = [ln.strip() for ln in (res["stderr"] or "").splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("error")]
    why = (errs or lines or [f"exit status {res['rc']}"])[-1]
    if res["rc"] == "timeout":
        why = f"timed out after {res['wall_s']:.0f} s ({why})"
    return f"{what}: {why}"[:500]


def tail(text, n=2000):
    return (text or "")[-n:]


def merge_tree(src, dst):
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)


def run_tune_set(runner, flags, s, work, opts, base_cache=None):
    """One cold tune of a backend set. Returns the set's record."""
    rec = {"backends": s["backends"]}
    cache = os.path.join(work, "cache-" + s["name"].replace("+", "_"))
    os.makedirs(cache, exist_ok=True)
    if base_cache:
        merge_tree(base_cache, cache)
        rec["started_from_prebuild"] = True
    out = os.path.join(work, "tune-" + s["name"].replace("+", "_") + ".json")
    args = ["tune"] + flags + ["--json", out, "--force"]
    if s["backends"]:
        args += ["--backends", ",".join(s["backends"])]
    if opts.top_k is not None:
        args += ["--top-k", str(opts.top_k)]
    if opts.threads:
        args += ["--threads", str(opts.threads)]
    if opts.cutlass == "wait" and set_has(s, "cutlass") and opts.has_wait_compile and opts.cutlass_available:
        args.append("--wait-compile")
    res = runner.run(args + runner.extra, cache, out)
    if res["rc"] == 3:  # gemmtune's exit status for "no GPU": every other tune would say the same
        raise SystemExit(failure(res, "gemmtune tune") + " (--compile-only measures compile times without a GPU)")
    records = tune_records(res["json"])
    wall = res["json"].get("wall_ms") if isinstance(res["json"], dict) else None
    rec.update({"rc": res["rc"], "process_wall_s": res["wall_s"], "tune_wall_ms": wall or parse_wall_ms(res["stdout"]),
                "device": parse_device(res["stdout"]), "threads": opts.threads or os.cpu_count(),
                "results": records, "cache_dir": cache})
    win = [r for r in records if r.get("winner")]
    if win and win[0].get("status") == "ok":
        rec.update({"status": "ok", "winner": cand_str(win[0]), "winner_us": win[0].get("us_median")})
    else:
        rec.update({"status": "error", "error": failure(res, "tune"), "stderr_tail": tail(res["stderr"])})
    rec["cold_compiles"] = cold_compiles(records)
    return rec


def run_prebuild(runner, flags, work, opts):
    """`gemmtune compile --backends cutlass` of one shape into a cache the cutlass sets start from. The cache lives
    for the whole run, as a user's prebuilt cache does: a CUTLASS kernel serves every shape of its dtypes, layouts,
    epilogue and config, so a later shape compiles only the kernels it adds."""
    if not opts.prebuild_cache:
        opts.prebuild_cache = tempfile.mkdtemp(prefix="gemmtune-backends-prebuild-", dir=opts.work_dir or None)
        if not opts.keep_caches:  # also when the run stops early
            atexit.register(shutil.rmtree, opts.prebuild_cache, True)
            atexit.register(shutil.rmtree, opts.prebuild_cache + "-triton", True)
    cache = opts.prebuild_cache
    out = os.path.join(work, "prebuild.json")
    args = ["compile"] + flags + ["--backends", "cutlass", "--json", out]
    if opts.top_k is not None:
        args += ["--top-k", str(opts.top_k)]
    if opts.threads:
        args += ["--threads", str(opts.threads)]
    res = runner.run(args, cache, out)
    doc = res["json"] if isinstance(res["json"], dict) else {}
    rec = {"rc": res["rc"], "process_wall_s": res["wall_s"], "cache_dir": cache,
           "wall_ms": (doc.get("summary") or {}).get("wall_ms"), "threads": doc.get("threads"),
           "results": doc.get("candidates", []), "status": "ok" if doc.get("candidates") else "error"}
    if rec["status"] != "ok":
        rec.update({"error": failure(res, "compile --backends cutlass"), "stderr_tail": tail(res["stderr"])})
    rec["cold_compiles"] = cold_compiles(rec["results"])
    return rec


def run_side_by_side(runner, flags, configs, refs, work, opts, caches):
    """ONE tune of the given configs (timed interleaved, same buffers) plus cuBLASLt's default (refs: the fused
    reference first, its fallbacks after). A config the CLI refuses as an argument is dropped with the reason and
    the rest run; a refused reference is replaced by the next one."""
    cache = os.path.join(work, "cache-side-by-side")
    os.makedirs(cache, exist_ok=True)
    for c in caches:  # every set's compiled kernels: no config is compiled again
        merge_tree(c, cache)
    out = os.path.join(work, "side-by-side.json")
    configs, refs, dropped = list(dict.fromkeys(configs)), list(refs), {}
    rec = {}
    while True:
        ref = refs[0] if refs else None
        todo = configs + ([ref] if ref and ref not in configs else [])
        if not todo:
            rec.update({"status": "error", "error": "nothing to time"})
            break
        args = ["tune"] + flags + ["--json", out, "--force"]
        for c in todo:
            args += ["--config", c]
        if opts.has_wait_compile and any(c.startswith("cutlass:") for c in todo):
            args.append("--wait-compile")
        if os.path.exists(out):
            os.remove(out)
        res = runner.run(args + runner.extra, cache, out)
        bad = usage_error_config(res["stderr"]) if res["rc"] == 2 else None
        if bad in todo:
            dropped[bad] = failure(res, "side by side")
            if bad == ref:
                refs.pop(0)
            else:
                configs.remove(bad)
            continue
        records = tune_records(res["json"])
        us = {cand_str(r): r.get("us_median") for r in records if r.get("status") == "ok"}
        status = {cand_str(r): r.get("status") for r in records}
        rec.update({"rc": res["rc"], "process_wall_s": res["wall_s"], "configs": todo, "reference": ref,
                    "results": records, "us": us, "statuses": status,
                    "status": "ok" if us else "error"})
        if not us:
            rec.update({"error": failure(res, "side by side"), "stderr_tail": tail(res["stderr"])})
        break
    rec["dropped"] = dropped
    return rec


def run_compile_set(runner, flags, s, work, opts, available):
    """`gemmtune compile --no-cache` of one backend set (no GPU needed)."""
    backends = s["backends"] or available
    out = os.path.join(work, "compile-" + s["name"].replace("+", "_") + ".json")
    cache = os.path.join(work, "cache-" + s["name"].replace("+", "_"))
    os.makedirs(cache, exist_ok=True)
    args = ["compile"] + flags + ["--backends", ",".join(backends), "--json", out, "--no-cache", "-q"]
    if opts.top_k is not None:
        args += ["--top-k", str(opts.top_k)]
    if opts.threads:
        args += ["--threads", str(opts.threads)]
    res = runner.run(args, cache, out)
    doc = res["json"] if isinstance(res["json"], dict) else {}
    records = doc.get("candidates", [])
    rec = {"backends": backends, "rc": res["rc"], "process_wall_s": res["wall_s"],
           "wall_ms": (doc.get("summary") or {}).get("wall_ms"), "threads": doc.get("threads"),
           "results": records, "cold_compiles": cold_compiles(records)}
    if records:
        rec["status"] = "ok"
    else:
        rec.update({"status": "error", "error": failure(res, "compile"), "stderr_tail": tail(res["stderr"])})
    return rec


def unavailable_reason(s, version):
    """Why a set cannot run at all here (every backend of it unknown or unavailable), or ""."""
    if s["backends"] is None or not version.get("backends"):
        return ""
    known = set(version["backends"]) | set(version["unavailable"])
    whys = []
    for b in s["backends"]:
        if b in version["backends"]:
            return ""
        whys.append(f"{b}: unavailable: {version['unavailable'][b]}" if b in version["unavailable"]
                    else f"{b}: unknown backend (this gemmtune has {', '.join(sorted(known))})")
    return "; ".join(whys)


# ---------------------------------------------------------------------------------------------------------------
# the run


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1)
    os.replace(tmp, path)


def strip_for_raw(rec):
    """A set record as it is kept: its cache directory is gone after the shape."""
    return {k: v for k, v in rec.items() if k != "cache_dir"}


def run(opts):
    with open(opts.suite) as fh:
        suite = json.load(fh)
    suite_name = suite.get("name") or os.path.splitext(os.path.basename(opts.suite))[0]
    shapes = select_shapes(suite.get("shapes", []), opts.filter, opts.max_shapes)
    if not shapes:
        raise SystemExit(f"{opts.suite}: no shape matches --filter '{opts.filter}'")
    sets = parse_sets(opts.sets)
    runner = Runner(opts.gemmtune, opts.timeout_s, opts.verbose, opts.gemmtune_arg)
    ver = runner.run(["version"])
    if ver["rc"] != 0:
        raise SystemExit(f"{opts.gemmtune}: cannot run it: {failure(ver, 'gemmtune version')}")
    version = parse_version(ver["stdout"])
    helptext = runner.run(["tune", "--help"])["stdout"]
    opts.has_wait_compile = "--wait-compile" in helptext
    opts.cutlass_available = not unavailable_reason({"backends": ["cutlass"]}, version)
    mode = "compile" if opts.compile_only else "tune"
    opts.prebuild_cache = None  # made by the first prebuild
    os.makedirs(opts.out, exist_ok=True)
    out_path = os.path.join(opts.out, f"backends-{suite_name}" + ("-compile" if opts.compile_only else "") + ".json")
    raw = {"gemmtune_backends": 1, "mode": mode, "suite": suite_name, "suite_file": opts.suite,
           "gemmtune": opts.gemmtune, "version": version, "host": platform.node(), "cpus": os.cpu_count(),
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "options": {"sets": [s["name"] for s in sets], "filter": opts.filter, "max_shapes": opts.max_shapes,
                       "top_k": opts.top_k, "threads": opts.threads, "cutlass": opts.cutlass,
                       "wait_compile_supported": opts.has_wait_compile, "extra": opts.gemmtune_arg},
           "sets": sets, "shapes": []}
    if opts.resume and os.path.exists(out_path):
        with open(out_path) as fh:
            old = json.load(fh)
        if old.get("mode") != mode:
            raise SystemExit(f"--resume: {out_path} holds a {old.get('mode')} run, not a {mode} run")
        raw["shapes"] = old.get("shapes", [])
        raw["started_at"] = old.get("started_at", raw["started_at"])
        done = {r["name"] for r in raw["shapes"]}
        log(f"--resume: {len(done)} shapes already in {out_path}")
        shapes = [s for s in shapes if shape_name(s) not in done]
    if opts.stop_after > 0 and len(shapes) > opts.stop_after:
        log(f"--stop-after {opts.stop_after}: {len(shapes) - opts.stop_after} shapes left for a later --resume")
        shapes = shapes[:opts.stop_after]
    if opts.inductor_json:
        raw["inductor"] = load_json(opts.inductor_json)
    for s in sets:
        why = unavailable_reason(s, version)
        if why:
            log(f"set {s['name']}: {why}")

    n = len(shapes)
    for i, shape in enumerate(shapes, 1):
        name = shape_name(shape)
        row = {"name": name, "shape": shape, "sets": {}}
        try:
            flags = problem_flags(shape, suite)
        except ValueError as e:
            row["error"] = str(e)
            raw["shapes"].append(row)
            log(f"[{i}/{n}] {name}: {e}")
            continue
        row["flags"] = flags
        work = tempfile.mkdtemp(prefix="gemmtune-backends-", dir=opts.work_dir or None)
        try:
            if mode == "tune":
                run_shape_tune(runner, row, shape, suite, flags, sets, version, work, opts, f"[{i}/{n}] {name}")
            else:
                available = version.get("backends") or ["sm90", "gemv"]
                for s in sets:
                    why = unavailable_reason(s, version)
                    if why:
                        row["sets"][s["name"]] = {"status": "unavailable", "error": why}
                        continue
                    rec = run_compile_set(runner, flags, s, work, opts, available)
                    row["sets"][s["name"]] = strip_for_raw(rec)
                    cc = rec["cold_compiles"]
                    med = {b: f"{statistics.median(v):.0f} ms" for b, v in cc.items()}
                    log(f"[{i}/{n}] {name} {s['name']}: {rec['status']}, {rec['process_wall_s']:.1f} s, "
                        f"median per compile {med or '-'}" + (f" ({rec['error']})" if rec.get("error") else ""))
        finally:
            if opts.keep_caches:
                row["work_dir"] = work
            else:
                shutil.rmtree(work, ignore_errors=True)
        raw["shapes"].append(row)
        raw["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_json(out_path, raw)  # after each shape: a time limit keeps what was done
    raw["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_json(out_path, raw)
    md = "\n".join(report_lines(raw, raw.get("inductor"))) + "\n"
    md_path = out_path[:-len(".json")] + ".md"
    with open(md_path, "w") as fh:
        fh.write(md)
    print(md, end="")
    log(f"wrote {out_path} and {md_path}")
    return out_path


def run_shape_tune(runner, row, shape, suite, flags, sets, version, work, opts, label):
    prebuild = None
    if opts.cutlass == "prebuild" and opts.cutlass_available and any(set_has(s, "cutlass") for s in sets):
        prebuild = run_prebuild(runner, flags, work, opts)
        row["prebuild"] = strip_for_raw(prebuild)
        log(f"{label} prebuild cutlass: {prebuild['status']}, {prebuild['process_wall_s']:.1f} s"
            + (f" ({prebuild['error']})" if prebuild.get("error") else ""))
    caches = []
    for s in sets:
        why = unavailable_reason(s, version)
        if why:
            row["sets"][s["name"]] = {"status": "unavailable", "error": why}
            continue
        base = prebuild["cache_dir"] if prebuild and set_has(s, "cutlass") else None
        rec = run_tune_set(runner, flags, s, work, opts, base)
        caches.append(rec["cache_dir"])
        row["sets"][s["name"]] = strip_for_raw(rec)
        if not row.get("device"):
            row["device"] = rec.get("device")
        log(f"{label} {s['name']}: {rec['status']}, {rec['process_wall_s']:.1f} s"
            + (f", {rec['winner']} {fnum(rec['winner_us'])} us" if rec["status"] == "ok" else f" ({rec['error']})"))
    winners = [r["winner"] for r in row["sets"].values() if r.get("status") == "ok"]
    sbs = run_side_by_side(runner, flags, winners, cublas_reference(shape, suite), work, opts, caches)
    row["side_by_side"] = sbs
    log(f"{label} side by side: {sbs['status']}, {sbs.get('process_wall_s', 0):.1f} s"
        + (f" ({sbs['error']})" if sbs.get("error") else ""))


def load_json(path):
    with open(path) as fh:
        return json.load(fh)


# ---------------------------------------------------------------------------------------------------------------
# the tables


def _tb():
    """bench/torch_baseline.py, for its geomean and suite helpers (it imports torch only inside its GPU run)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import torch_baseline
    return torch_baseline


def geomean(xs):
    """(geometric mean, count) over the finite positive values, as torch_baseline.py reports its suites."""
    return _tb().geomean(xs)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fnum(v, prec=2):
    return "-" if v is None or not (isinstance(v, (int, float)) and math.isfinite(v)) else f"{v:.{prec}f}"


def inductor_rows(ind):
    """{shape name: torch_baseline result row}, and whether its timing is gemmtune's (absolute µs comparable)."""
    if not ind:
        return {}, False
    same = ind.get("meta", {}).get("timing", "").startswith("median of per-launch")
    return {r["name"]: r for r in ind.get("results", []) if "name" in r}, same


def shape_summary(row, set_names, ind_row=None, same_timing=False):
    """The numbers of one shape of a tune run: cuBLASLt default µs, each set's side-by-side µs and × cuBLAS, the
    fastest single set, whether `all` holds up, Inductor's µs (absolute or bridged) and its times."""
    sbs = row.get("side_by_side") or {}
    us = sbs.get("us") or {}
    cub = us.get(sbs.get("reference")) if sbs.get("reference") else None
    out = {"name": row["name"], "cublas_us": cub, "sets": {}, "flag": None}
    for name in set_names:
        rec = row.get("sets", {}).get(name)
        cell = {"status": "missing"} if rec is None else {"status": rec.get("status", "?")}
        if rec and rec.get("status") == "ok":
            w = rec["winner"]
            t = us.get(w)
            cell.update({"winner": w, "tune_us": rec.get("winner_us")})
            if t is None:
                why = (sbs.get("statuses") or {}).get(w) or sbs.get("dropped", {}).get(w) or sbs.get("error")
                cell.update({"status": "error", "error": f"side by side: {why or 'not timed'}"})
            else:
                cell.update({"us": t, "x_cublas": cub / t if cub else None})
        elif rec:
            cell["error"] = rec.get("error", "")
        out["sets"][name] = cell
    singles = {n: c["us"] for n, c in out["sets"].items() if n != "all" and c.get("us")}
    if singles:
        best = min(singles, key=singles.get)
        out["fastest_set"], out["fastest_us"] = best, singles[best]
        all_us = out["sets"].get("all", {}).get("us")
        if all_us:
            beaten = {n: t for n, t in singles.items() if all_us > t * (1 + NOISE)}
            out["all_ok"] = not beaten
            if beaten:
                out["flag"] = "all slower than " + ", ".join(f"{n} ({all_us / t:.3f}x its µs)"
                                                            for n, t in sorted(beaten.items(), key=lambda x: x[1]))
    if ind_row and ind_row.get("compile_us"):
        ind_us, eager_us = ind_row["compile_us"], ind_row.get("eager_us")
        out["inductor_x_cublas"] = eager_us / ind_us if eager_us else None
        if same_timing:
            out["inductor_us"], out["inductor_how"] = ind_us, "absolute"
        elif cub and eager_us:
            out["inductor_us"], out["inductor_how"] = cub * ind_us / eager_us, "bridged"
        all_us = out["sets"].get("all", {}).get("us")
        if all_us and out.get("inductor_us"):
            out["all_vs_inductor"] = out["inductor_us"] / all_us
    if ind_row:
        out["inductor_autotune_s"] = ind_row.get("autotune_s")
        out["inductor_pick"] = ind_row.get("inductor_pick")
    return out


def compile_table(raw):
    """Rows (set, backend): cold compiles counted, median / min / max ms per compile over all shapes, the set's cold
    wall per shape (median and max: the tune wall of the report, or compile's wall), threads."""
    rows = []
    for s in raw["sets"]:
        name = s["name"]
        per_backend, walls, threads = {}, [], set()
        unavailable = []
        for row in raw["shapes"]:
            rec = row.get("sets", {}).get(name)
            if rec and rec.get("status") == "unavailable":
                unavailable.append(rec.get("error", ""))
            if not rec or rec.get("status") in ("unavailable", "missing"):
                continue
            cold = cold_compiles(rec["results"]) if rec.get("results") else rec.get("cold_compiles") or {}
            for b, ms in cold.items():
                per_backend.setdefault(b, []).extend(ms)
            w = rec.get("tune_wall_ms") if raw["mode"] == "tune" else rec.get("wall_ms")
            if w is None:
                w = rec.get("process_wall_s", 0) * 1e3 or None
            if w is not None and rec.get("status") == "ok":
                walls.append(w / 1e3)
            if rec.get("threads"):
                threads.add(rec["threads"])
        wall_med, wall_max = median(walls), (max(walls) if walls else None)
        for b in sorted(per_backend) or ["unavailable" if unavailable and not walls else "-"]:
            ms = per_backend.get(b, [])
            rows.append({"set": name, "backend": b, "compiles": len(ms), "median_ms": median(ms),
                         "min_ms": min(ms) if ms else None, "max_ms": max(ms) if ms else None,
                         "wall_median_s": wall_med, "wall_max_s": wall_max, "shapes": len(walls),
                         "threads": ",".join(str(t) for t in sorted(threads)) or None})
    pre = [row["prebuild"] for row in raw["shapes"] if row.get("prebuild")]
    if pre:
        ms = [x for p in pre for v in cold_compiles(p.get("results") or []).values() for x in v]
        walls = [(p.get("wall_ms") or p.get("process_wall_s", 0) * 1e3) / 1e3 for p in pre if p.get("status") == "ok"]
        rows.append({"set": "cutlass prebuild (gemmtune compile)", "backend": "cutlass", "compiles": len(ms),
                     "median_ms": median(ms), "min_ms": min(ms) if ms else None, "max_ms": max(ms) if ms else None,
                     "wall_median_s": median(walls), "wall_max_s": max(walls) if walls else None,
                     "shapes": len(walls),
                     "threads": ",".join(sorted({str(p["threads"]) for p in pre if p.get("threads")})) or None})
    return rows


def md_table(header, rows, right):
    def esc(c):
        return str(c).replace("|", "\\|")
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return out


def report_lines(raw, inductor=None):
    """The Markdown report of a run (tune or compile mode)."""
    set_names = [s["name"] for s in raw["sets"]]
    ver = raw.get("version", {})
    device = next((r.get("device") for r in raw["shapes"] if r.get("device")), None) or ver.get("gpu", "?")
    out = [f"# Backends on {raw['suite']}: "
           + ("compile only" if raw["mode"] == "compile" else device),
           "",
           f"gemmtune {ver.get('version', '?')}, host {raw.get('host', '?')} ({raw.get('cpus', '?')} CPUs), "
           f"{(raw.get('finished_at') or raw.get('started_at') or '')[:16]}, {len(raw['shapes'])} shapes of "
           f"`{raw.get('suite_file', '?')}`; sets: {', '.join(set_names)}"
           + (f"; CUTLASS: {raw['options'].get('cutlass')}" if raw["mode"] == "tune" else ""),
           ""]
    gone = {b: w for b, w in (ver.get("unavailable") or {}).items()}
    for row in raw["shapes"]:
        for name, rec in row.get("sets", {}).items():
            if rec.get("status") == "unavailable" and not any(b in gone for b in name.split("+")):
                gone[name] = rec.get("error", "")
    if gone:
        out += ["Unavailable here: " + "; ".join(f"{b} ({w})" for b, w in gone.items()), ""]
    ind_rows, same = inductor_rows(inductor)
    if raw["mode"] == "tune":
        out += speed_lines(raw, set_names, ind_rows, same, inductor is not None)
    out += ["## Compile time (cold: candidates compiled from scratch; cache hits left out)", ""]
    rows = []
    for r in compile_table(raw):
        rows.append([r["set"], r["backend"], r["compiles"], fnum(r["median_ms"], 0), fnum(r["min_ms"], 0),
                     fnum(r["max_ms"], 0), fnum(r["wall_median_s"], 1), fnum(r["wall_max_s"], 1), r["shapes"],
                     r["threads"] or "-"])
    wall = "cold tune wall s" if raw["mode"] == "tune" else "compile wall s"
    if ind_rows:
        autotune = [r.get("autotune_s") for r in ind_rows.values()
                    if r.get("autotune_s") is not None and r["name"] in {x["name"] for x in raw["shapes"]}]
        rows.append(["Inductor max-autotune (torch_baseline.py)", "all of Inductor's", "-", "-", "-", "-",
                     fnum(median(autotune), 1), fnum(max(autotune) if autotune else None, 1), len(autotune), "-"])
    out += md_table(["set", "backend", "compiled", "median ms / compile", "min ms", "max ms",
                     f"{wall}, median / shape", "max", "shapes", "threads"], rows,
                    [False, False, True, True, True, True, True, True, True, False])
    out += ["", "Per compile: the backend's own compile time of one candidate (NVRTC, Triton's compile in its helper "
            "process, nvcc) with the set's other compiles running beside it on the same threads; "
            + ("the cold tune wall is the report's wall (compile, verify, time) with empty caches."
               if raw["mode"] == "tune" else "the compile wall is `gemmtune compile --no-cache`'s wall for the set.")]
    errs = []
    for row in raw["shapes"]:
        if row.get("error"):
            errs.append(f"- {row['name']}: {row['error']}")
        for name, rec in row.get("sets", {}).items():
            if rec.get("status") not in ("ok", "unavailable"):  # an unavailable backend is named once, above
                errs.append(f"- {row['name']} {name}: {rec.get('status')}: {rec.get('error', '')}")
            bad = failed_candidates(rec.get("results") or [])
            if bad:
                errs.append(f"- {row['name']} {name}: {bad}")
        sbs = row.get("side_by_side") or {}
        if sbs.get("error"):
            errs.append(f"- {row['name']} side by side: {sbs['error']}")
        for c, why in (sbs.get("dropped") or {}).items():
            errs.append(f"- {row['name']} side by side dropped {c}: {why}")
    if errs:
        out += ["", "## Failures", ""] + errs
    return out


def speed_lines(raw, set_names, ind_rows, same, with_inductor):
    out = ["## Speed (µs of each set's winner, all timed side by side in one process; × cuBLAS = cuBLASLt default "
           "µs ÷ µs)", ""]
    summaries = [shape_summary(r, set_names, ind_rows.get(r["name"]), same) for r in raw["shapes"]]
    header = ["shape", "cuBLAS µs"] + [f"{n} µs (× cuBLAS)" for n in set_names] + ["fastest set", "all ≥ each"]
    if with_inductor:
        header += ["Inductor µs (× cuBLAS)", "Inductor µs ÷ all µs", "Inductor autotune s"]
    rows = []
    for s in summaries:
        cells = [s["name"], fnum(s["cublas_us"])]
        for n in set_names:
            c = s["sets"][n]
            if c.get("us") is not None:
                cells.append(f"{c['us']:.2f} ({fnum(c.get('x_cublas'), 3)})")
            else:
                cells.append(c["status"] if c["status"] != "ok" else "-")
        cells.append(s.get("fastest_set", "-"))
        cells.append("-" if "all_ok" not in s else ("yes" if s["all_ok"] else "NO"))
        if with_inductor:
            iu = s.get("inductor_us")
            cells.append(f"{iu:.2f}{'*' if s.get('inductor_how') == 'bridged' else ''} "
                         f"({fnum(s.get('inductor_x_cublas'), 3)})" if iu else "-")
            cells.append(fnum(s.get("all_vs_inductor"), 3))
            cells.append(fnum(s.get("inductor_autotune_s"), 1))
        rows.append(cells)
    geo = ["geomean", ""]
    for n in set_names:
        g, k = geomean([s["sets"][n].get("x_cublas") for s in summaries])
        geo.append(f"× {g:.3f} ({k} shapes)" if k else "-")
    geo += ["", ""]
    if with_inductor:
        g, k = geomean([s.get("inductor_x_cublas") for s in summaries])
        g2, k2 = geomean([s.get("all_vs_inductor") for s in summaries])
        geo += [f"× {g:.3f} ({k})" if k else "-", f"{g2:.3f} ({k2})" if k2 else "-", ""]
    rows.append(geo)
    out += md_table(header, rows, [False] + [True] * (len(header) - 1))
    out.append("")
    flagged = [f"- {s['name']}: {s['flag']}" for s in summaries if s.get("flag")]
    checked = sum(1 for s in summaries if "all_ok" in s)
    out.append(f"`all` at least as fast as every single set (within {NOISE:.0%}): "
               f"{checked - len(flagged)} of {checked} shapes" + (":" if flagged else "."))
    out += flagged
    wins = {}
    for s in summaries:
        if s.get("fastest_set"):
            wins[s["fastest_set"]] = wins.get(s["fastest_set"], 0) + 1
    if wins:
        out.append("Fastest single set: " + ", ".join(f"{n} {k}" for n, k in sorted(wins.items(), key=lambda x: -x[1])))
    if with_inductor:
        behind = [f"{s['name']} {s['all_vs_inductor']:.3f}" for s in summaries
                  if s.get("all_vs_inductor") is not None and s["all_vs_inductor"] < 1 - NOISE]
        how = ("absolute (same timing method)" if same else
               "* bridged: cuBLASLt default µs × Inductor µs ÷ F.linear µs of its own harness")
        out.append(f"Inductor µs: {how}; `all` behind Inductor by more than {NOISE:.0%}: "
                   + (", ".join(behind) if behind else "none"))
    out.append("")
    return out


# ---------------------------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", help="suite file, e.g. bench/suites/large.json")
    ap.add_argument("--gemmtune", default=os.path.join("build", "gemmtune"), help="the CLI (default build/gemmtune)")
    ap.add_argument("--sets", default=DEFAULT_SETS,
                    help=f"comma-separated backend sets, backends of a set joined by '+', 'all' = every backend "
                         f"(default {DEFAULT_SETS})")
    ap.add_argument("--filter", default="", help="only shapes whose name contains this")
    ap.add_argument("--max-shapes", type=int, default=0, help="at most N shapes, spread evenly over the suite")
    ap.add_argument("--out", default="out", help="output folder (default out)")
    ap.add_argument("--cutlass", choices=["wait", "prebuild"], default="wait",
                    help="wait: tune --wait-compile (CUTLASS compiles inside the cold tune); prebuild: `gemmtune "
                         "compile --backends cutlass` first, timed on its own")
    ap.add_argument("--top-k", type=int, default=None, help="candidates per backend (gemmtune's default: 8)")
    ap.add_argument("--threads", type=int, default=0, help="compile threads (default: gemmtune's, all cores)")
    ap.add_argument("--gemmtune-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for every tune, e.g. --gemmtune-arg=--min-time-ms=50 (repeat it)")
    ap.add_argument("--timeout-s", type=float, default=3600, help="limit per gemmtune command (default 3600)")
    ap.add_argument("--compile-only", action="store_true",
                    help="no GPU: `gemmtune compile --no-cache` per set and shape, the compile-time table only")
    ap.add_argument("--inductor-json", default="", help="bench/torch_baseline.py's JSON of the same suite")
    ap.add_argument("--report", default="", metavar="RAW_JSON", help="print the tables of an earlier run")
    ap.add_argument("--resume", action="store_true", help="keep the shapes already in the output JSON, run the rest")
    ap.add_argument("--stop-after", type=int, default=0, metavar="N",
                    help="run at most N shapes this time (with --resume: N more), then write the tables")
    ap.add_argument("--work-dir", default="", help="where the per-shape caches go (default: the system's temp)")
    ap.add_argument("--keep-caches", action="store_true", help="keep each shape's cache directories")
    ap.add_argument("-v", "--verbose", action="store_true", help="pass gemmtune's own progress lines through")
    opts = ap.parse_args(argv)
    if opts.report:
        raw = load_json(opts.report)
        ind = load_json(opts.inductor_json) if opts.inductor_json else raw.get("inductor")
        print("\n".join(report_lines(raw, ind)))
        return 0
    if not opts.suite:
        ap.error("--suite is required (or --report RAW_JSON)")
    if opts.max_shapes < 0 or opts.stop_after < 0:
        ap.error("--max-shapes and --stop-after must be >= 0")
    try:
        parse_sets(opts.sets)
    except ValueError as e:
        ap.error(str(e))
    if not os.path.exists(opts.gemmtune):
        found = shutil.which(opts.gemmtune)
        if not found:
            ap.error(f"--gemmtune {opts.gemmtune}: no such file (build it: scripts/build.sh)")
        opts.gemmtune = found
    opts.gemmtune = os.path.abspath(opts.gemmtune)
    run(opts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
