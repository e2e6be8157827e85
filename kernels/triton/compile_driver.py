"""Compiles one Triton template to a cubin, for gemmtune's triton backend (src/backends/triton/triton_backend.cpp).

    python3 compile_driver.py <template_dir> <out_dir>    (the request, one JSON object, in <out_dir>/request.json)

Request: {"module", "kernel", "signature": {arg: type} for every argument (constexprs too, as "constexpr"),
"order": [args in the kernel's order], "constexprs": {arg: int}, "divisible16": [args], "num_warps", "num_stages", "arch"}.
Writes <out_dir>/kernel.cubin and <out_dir>/meta.json (the launch facts the backend needs: symbol, warps, CTAs,
shared memory, scratch sizes, and the kernel's parameters as compiled, which the backend checks against its own
argument list). Any failure: the traceback on stderr, exit status 1. No GPU is needed: the target is explicit.
"""
import json
import os
import sys
import time


def main():
    template_dir, out_dir = sys.argv[1], sys.argv[2]
    # Triton's own cache would answer a repeated compile from ~/.triton; gemmtune caches the result itself, so each
    # request compiles in a private directory (the compile time recorded is a real one).
    os.environ["TRITON_CACHE_DIR"] = os.path.join(out_dir, "triton_cache")
    with open(os.path.join(out_dir, "request.json")) as f:
        req = json.load(f)
    sys.path.insert(0, template_dir)
    t0 = time.perf_counter()
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = getattr(importlib.import_module(req["module"]), req["kernel"])
    names = list(fn.arg_names)
    # The signature in the kernel's argument order ("order": JSON objects do not keep one).
    order = req.get("order", list(req["signature"]))
    if order != names or sorted(order) != sorted(req["signature"]):
        raise SystemExit("compile_driver: the request names the arguments %s but %s.%s takes %s"
                         % (order, req["module"], req["kernel"], names))
    sig = {a: req["signature"][a] for a in order}
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in req.get("divisible16", [])}
    src = ASTSource(fn=fn, signature=sig, constexprs=req["constexprs"], attrs=attrs)
    kernel = triton.compile(src, target=GPUTarget("cuda", int(req.get("arch", 90)), 32),
                            options={"num_warps": int(req["num_warps"]), "num_stages": int(req["num_stages"])})
    md = kernel.metadata
    cubin = kernel.asm["cubin"]
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
    with open(os.path.join(out_dir, "kernel.cubin"), "wb") as f:
        f.write(cubin)
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f)


if __name__ == "__main__":
    main()
