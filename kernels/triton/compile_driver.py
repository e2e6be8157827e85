"""Compiles Triton templates to cubins, for gemmtune's triton backend (src/backends/triton/triton_compile.cpp).

    python3 compile_driver.py <template_dir> <job_dir>      one job, then exit (status 1 and the traceback on stderr
                                                            on failure)
    python3 compile_driver.py --serve <template_dir>        a warm helper: one job directory per line on stdin,
                                                            answered "ok" or "error" on a line of stdout, in order

A job directory holds request.json: {"module", "kernel", "signature": {arg: type} for every argument (constexprs too,
as "constexpr"), "order": [args in the kernel's order], "constexprs": {arg: int}, "divisibility": {arg: a power of two
2-16 that divides it}, "num_warps", "num_stages", "arch", optionally "symbol" (the kernel's name)}. The job writes kernel.cubin and meta.json there (the launch facts the backend needs: symbol,
warps, CTAs, shared memory, scratch sizes, and the kernel's parameters as compiled, which the backend checks against
its own argument list); a served job also writes log.txt (everything it printed; the traceback of a failure). No GPU
is needed: the target is explicit. The warm helper saves each compile the interpreter's start and Triton's import.
"""
import json
import os
import sys
import time
import traceback


def compile_job(template_dir, job_dir):
    # Triton's own cache would answer a repeated compile from ~/.triton; gemmtune caches the result itself, so each
    # job compiles in a private directory (the compile time recorded is a real one). Triton reads it per compile.
    os.environ["TRITON_CACHE_DIR"] = os.path.join(job_dir, "triton_cache")
    with open(os.path.join(job_dir, "request.json")) as f:
        req = json.load(f)
    if template_dir not in sys.path:
        sys.path.insert(0, template_dir)
    t0 = time.perf_counter()
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = getattr(importlib.import_module(req["module"]), req["kernel"])
    # The kernel's symbol: the request's own ("symbol"), unique to it, else the template function's name. Set on
    # every job: a warm helper reuses the function object.
    fn._repr = (lambda _, s=req["symbol"]: s) if "symbol" in req else None
    names = list(fn.arg_names)
    # The signature in the kernel's argument order ("order": JSON objects do not keep one).
    order = req.get("order", list(req["signature"]))
    if order != names or sorted(order) != sorted(req["signature"]):
        raise ValueError("compile_driver: the request names the arguments %s but %s.%s takes %s"
                         % (order, req["module"], req["kernel"], names))
    sig = {a: req["signature"][a] for a in order}
    attrs = {(names.index(a),): [["tt.divisibility", int(d)]] for a, d in req.get("divisibility", {}).items()}
    src = ASTSource(fn=fn, signature=sig, constexprs=req["constexprs"], attrs=attrs)
    kernel = triton.compile(src, target=GPUTarget("cuda", int(req.get("arch", 90)), 32),
                            options={"num_warps": int(req["num_warps"]), "num_stages": int(req["num_stages"])})
    md = kernel.metadata
    # The launcher passes every argument that is not a constexpr, in order, then the two scratch pointers.
    params = [[a, sig[a]] for a in names if sig[a] != "constexpr" and a not in req["constexprs"]]
    meta = {
        "name": md.name,
        "num_warps": md.num_warps,
        "num_ctas": md.num_ctas,
        "shared": md.shared,
        "global_scratch_size": md.global_scratch_size,
        "global_scratch_align": md.global_scratch_align,
        "profile_scratch_size": md.profile_scratch_size,
        "profile_scratch_align": md.profile_scratch_align,
        "launch_cooperative_grid": bool(md.launch_cooperative_grid),
        "launch_pdl": bool(md.launch_pdl),
        "triton_version": triton.__version__,
        "params": params,
        "compile_s": time.perf_counter() - t0,
    }
    with open(os.path.join(job_dir, "kernel.cubin"), "wb") as f:
        f.write(kernel.asm["cubin"])
    with open(os.path.join(job_dir, "meta.json"), "w") as f:
        json.dump(meta, f)


def serve(template_dir):
    # The answers go to the original stdout; while a job runs, file descriptors 1 and 2 (Python's and the compiler's
    # own writes, MLIR diagnostics included) go to the job's log.txt, so nothing fills a pipe nobody reads.
    answers = os.fdopen(os.dup(1), "w")
    saved = (os.dup(1), os.dup(2))
    for line in sys.stdin:
        job_dir = line.strip()
        if not job_dir:
            continue
        ok = False
        try:
            log = os.open(os.path.join(job_dir, "log.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError:
            answers.write("error\n")
            answers.flush()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        try:
            compile_job(template_dir, job_dir)
            ok = True
        except BaseException:  # a failed job is answered; the helper stays up for the next one
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
        answers.write("ok\n" if ok else "error\n")
        answers.flush()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(sys.argv[2])
    elif len(sys.argv) == 3:
        compile_job(sys.argv[1], sys.argv[2])
    else:
        raise SystemExit("usage: compile_driver.py <template_dir> <job_dir> | --serve <template_dir>")


if __name__ == "__main__":
    main()
