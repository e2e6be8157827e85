"""The package's core API without a GPU: problems, listing, the compile-only path, the caches and every error path."""
import json
import os
import re
import subprocess
import sys
import threading

import pytest

import gemmtune as gt


def test_version_and_device():
    assert gt.version() == gt.__version__
    assert gt.__version__.count(".") == 2
    d = gt.device()
    assert d["arch"].startswith("sm_")
    if not gt.gpu_available():
        assert d["real"] is False


def test_problem_make_and_info():
    p = gt.Problem.make(4096, 11008, 4096, "bf16", epilogue="bias,gelu_tanh")
    assert p.check() == ""
    assert p.validate() is p
    assert p.flops() == 2 * 4096 * 11008 * 4096
    assert p.n_out() == 11008
    assert p.epilogue_vector_len("bias_col") == 11008
    assert p.epilogue_vector_len("row_scale") == 0
    s = p.str()
    assert "--m=4096" in s and "--epilogue=bias,gelu_tanh" in s
    r = p.resolve()
    assert r.a.ld == 4096 and r.b.ld == 4096 and r.d.ld == 11008
    assert r.key() == p.key()


def test_problem_glu_halves_columns():
    p = gt.Problem.make(16, 512, 256, epilogue="silu_glu")
    assert p.n_out() == 256
    assert p.resolve().d.ld == 256


def test_problem_fp8():
    p = gt.Problem.make(256, 512, 1024, "e4m3", scaling="block")
    assert p.d.dtype == "bf16" and p.scaling == "block"
    assert p.scale_len("A") == 256 * 8
    assert p.scale_len("B") == 4 * 8
    with pytest.raises(ValueError):
        p.scale_len("C")


@pytest.mark.parametrize("mutate,needle", [
    (lambda p: setattr(p, "m", 0), "M, N, K must be >= 1"),
    (lambda p: setattr(p, "epilogue", "silu_glu"), "GLU"),               # odd N
    (lambda p: setattr(p.a, "dtype", "e4m3"), "fp8 B"),                  # fp8 A with a 16-bit B
    (lambda p: setattr(p.a, "ld", 3), "ld"),                             # ld below the row length
    (lambda p: setattr(p, "batch", -2), "batch"),
])
def test_problem_refusals_name_the_problem(mutate, needle):
    p = gt.Problem.make(64, 63, 64)
    mutate(p)
    why = p.check()
    assert why and needle.lower() in why.lower(), why
    with pytest.raises(gt.InvalidInputError) as e:
        p.validate()
    assert str(e.value) == why
    with pytest.raises(ValueError):  # InvalidInputError is also a ValueError
        p.key()
    with pytest.raises(gt.InvalidInputError):
        gt.candidates(p)


@pytest.mark.parametrize("field,value", [("dtype", "int8"), ("layout", "diagonal")])
def test_malformed_operand_is_invalid_input(field, value):
    p = gt.Problem.make(64, 64, 64)
    setattr(p.b, field, value)
    with pytest.raises(gt.InvalidInputError, match="dtype or layout"):
        p.check()


def test_bad_epilogue_named():
    p = gt.Problem.make(64, 64, 64, epilogue="bias,frobnicate")
    with pytest.raises(gt.InvalidInputError, match="frobnicate"):
        p.check()


def test_candidates_listing():
    p = gt.Problem.make(4096, 4096, 4096)
    cs = gt.candidates(p, backends=["sm90"], top_k=3, assume_sms=132)
    assert 1 <= len(cs) <= 3
    assert all(c.backend == "sm90" for c in cs)
    assert gt.Candidate.parse(str(cs[0])) == cs[0]
    every = gt.candidates(p, backends="sm90", assume_sms=132)
    assert len(every) >= len(cs) and every[: len(cs)] == cs
    decode = gt.candidates(gt.Problem.make(4, 4096, 4096), backends=["gemv"], top_k=2, assume_sms=132)
    assert decode and decode[0].backend == "gemv"


def test_candidates_errors():
    p = gt.Problem.make(64, 64, 64)
    with pytest.raises(gt.Error, match="unknown backend"):
        gt.candidates(p, backends=["nope"])
    with pytest.raises(gt.InvalidInputError, match="assume_sms"):
        gt.candidates(p, assume_sms=0)
    with pytest.raises(gt.InvalidInputError, match="top_k"):
        gt.candidates(p, top_k=-1)


def test_compile_only_path():
    p = gt.Problem.make(512, 512, 512, epilogue="bias,relu")
    lines = []
    r = gt.compile(p, backends=["sm90"], top_k=2, threads=2, progress=lines.append)
    assert len(r.candidates) >= 2
    ok = [c for c in r.candidates if c.status == "ok"]
    assert ok, [(str(c.candidate), c.status, c.reason) for c in r.candidates]
    for c in ok:
        assert c.registers > 0 and c.spill_bytes == 0 and c.smem_bytes > 0 and c.compile_ms > 0
        assert c.extra["compiled"] is True
    assert any("[1/" in s for s in lines), lines
    compiled = [e for e in lines if e.kind == "compiled"]
    assert compiled and all(isinstance(e, gt.ProgressEvent) and e.result.candidate.backend == "sm90" for e in compiled)
    assert sorted(e.count for e in compiled) == list(range(1, len(compiled) + 1)) and compiled[0].total == len(compiled)
    # The same candidate again comes from the kernel cache.
    again = gt.compile(p, only=ok[0].candidate)
    assert len(again.candidates) == 1 and again.candidates[0].status == "ok"
    assert again.candidates[0].compile_cache_hit


def test_compile_errors():
    p = gt.Problem.make(512, 512, 512)
    with pytest.raises(gt.InvalidInputError, match="candidate"):
        gt.compile(p, only="no-colon-here")
    r = gt.compile(p, only="sm90:tile=7x7x7")
    assert r.candidates[0].status == "unsupported" and r.candidates[0].reason


def test_progress_exception_propagates():
    def boom(line):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        gt.compile(gt.Problem.make(256, 256, 256), backends=["sm90"], top_k=1, progress=boom)


def test_tuner_options_validated():
    with pytest.raises(gt.InvalidInputError, match="isolation"):
        gt.Tuner(isolation="thread").tune(gt.Problem.make(64, 64, 64))
    with pytest.raises(gt.InvalidInputError, match="min_time_ms"):
        gt.Tuner(min_time_ms=-1).tune(gt.Problem.make(64, 64, 64))
    with pytest.raises(gt.InvalidInputError):
        gt.Tuner(only=["sm90"])
    with pytest.raises(TypeError):
        gt.Tuner(progress=42)


@pytest.mark.skipif(gt.gpu_available(), reason="checks the no-GPU errors")
def test_no_gpu_errors():
    p = gt.Problem.make(256, 256, 256)
    with pytest.raises(gt.NoGpuError):
        gt.Tuner(top_k=1).tune(p)
    with pytest.raises(gt.NoGpuError):
        gt.Tuner().select(p)
    with pytest.raises(gt.NoGpuError):
        gt.Tuner.load(p, gt.candidates(p, backends=["sm90"], top_k=1, assume_sms=132)[0])


def test_cache_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMTUNE_CACHE_DIR", str(tmp_path))
    assert gt.cache.directory() == str(tmp_path / "results")
    assert gt.cache.entries() == []
    assert gt.cache.clear() == 0
    out = tmp_path / "export.json"
    assert gt.cache.export(out) == 0
    doc = json.loads(out.read_text())
    assert doc["entries"] == []
    assert gt.cache.import_file(out) == 0
    with pytest.raises(gt.InvalidInputError):
        gt.cache.import_file(tmp_path / "missing.json")
    assert gt.cache.get("no such key") is None
    rec = {"key": "k|dev|lib|v", "problem": {}, "device": {}, "winner": "sm90:tile=128x128x64", "us": 1.5,
           "results": []}
    out.write_text(json.dumps({"gemmtune_cache": 1, "entries": [rec]}))
    assert gt.cache.import_file(out) == 1
    assert gt.cache.get("k|dev|lib|v") == {"key": "k|dev|lib|v", "record": rec}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(gt.InvalidInputError):
        gt.cache.import_file(bad)


def test_errors_are_per_thread():
    # Each thread sees its own failure's message, not another thread's.
    msgs = {}

    def fail(i):
        p = gt.Problem.make(64, 64, 64, epilogue=f"bogus{i}")
        try:
            p.check()
        except gt.InvalidInputError as e:
            msgs[i] = str(e)

    ts = [threading.Thread(target=fail, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(f"bogus{i}" in msgs[i] for i in range(8)), msgs


def test_cli_entry_point():
    r = subprocess.run([sys.executable, "-m", "gemmtune", "--version"], capture_output=True, text=True)
    if "without the command line" in r.stderr:
        pytest.skip("package built without CLI11")
    assert r.returncode == 0 and gt.__version__ in r.stdout
    r = subprocess.run([sys.executable, "-m", "gemmtune", "list", "--m", "0", "--n", "1", "--k", "1"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--m" in r.stderr


def test_worker_ships_with_the_package():
    import pathlib
    lib = pathlib.Path(gt.__file__).parent / "lib"
    if os.environ.get("GEMMTUNE_LIBRARY"):
        pytest.skip("running against a build tree")
    assert (lib / "gemmtune-worker").exists() and os.access(lib / "gemmtune-worker", os.X_OK)


def test_grouped_problem_fields_and_key_bucketing():
    p = gt.Problem.make(5000, 4096, 7168, "bf16", groups=32)
    assert p.grouping == "contiguous" and p.groups == 32 and p.grouped()
    assert p.check() == ""
    assert p.str().startswith("--m=5000 --n=4096 --k=7168 --groups=32 ")
    r = p.resolve()
    assert (r.grouping, r.groups, r.batch) == ("contiguous", 32, 1)
    assert r.b.batch_stride == 4096 * 7168  # B holds one weight per group
    # The key holds M rounded up to a power of two: 5000 and 8192 tokens share one tuning, 8193 does not.
    assert gt.Problem.make(8192, 4096, 7168, groups=32).key() == p.key()
    assert gt.Problem.make(8193, 4096, 7168, groups=32).key() != p.key()
    assert gt.Problem.make(5000, 4096, 7168).key() != p.key()
    assert not gt.Problem.make(64, 64, 64).grouped()
    assert gt.Problem.make(64, 64, 64, groups=1, grouping="contiguous").grouped()


def test_masked_problem_resolves_batch_and_scales():
    p = gt.Problem.make(128, 512, 256, "e4m3", scaling="row", groups=4, grouping="masked")
    assert p.check() == ""
    assert p.resolve().batch == 4
    assert p.str().startswith("--masked-m=128 --n=512 --k=256 --groups=4")
    assert p.scale_len("A") == 4 * 128
    assert p.scale_len("B") == 4 * 512
    # Masked problems keep M_max exactly in the key.
    assert gt.Problem.make(100, 512, 256, "e4m3", scaling="row", groups=4, grouping="masked").key() != p.key()


@pytest.mark.parametrize("mutate,needle", [
    (lambda p: setattr(p, "groups", 0), "groups must be in [1, 2^31)"),
    (lambda p: setattr(p, "batch", 2), "batch must be 1"),
    (lambda p: setattr(p, "grouping", "none"), "needs a grouping"),
])
def test_grouped_refusals_name_the_problem(mutate, needle):
    p = gt.Problem.make(64, 64, 64, groups=4)
    mutate(p)
    assert needle in p.check()
    with pytest.raises(gt.InvalidInputError, match=re.escape(needle)):
        p.validate()


def test_bad_grouping_is_invalid_input():
    p = gt.Problem.make(64, 64, 64, groups=4, grouping="ragged")
    with pytest.raises(gt.InvalidInputError, match="grouping"):
        p.check()


def test_grouped_problem_json_round_trip():
    p = gt.Problem.make(64, 128, 256, groups=8)
    j = json.loads(p.to_json())
    assert j["grouping"] == "contiguous" and j["groups"] == 8
    back = gt._api.problem_from_dict(p.info()["problem"])
    assert (back.grouping, back.groups) == ("contiguous", 8)
    assert back.key() == p.key()


def test_grouped_problem_lists_only_grouped_backends():
    p = gt.Problem.make(4, 512, 128, groups=2)
    assert gt.candidates(p, backends=["gemv", "cublaslt", "pad"], assume_sms=132) == []


def test_run_args_struct_matches_the_c_abi():
    import ctypes
    from gemmtune import _native
    assert _native.GemmArgs.group_rows.offset == 13 * ctypes.sizeof(ctypes.c_void_p)
    assert ctypes.sizeof(_native.GemmArgs) == 14 * ctypes.sizeof(ctypes.c_void_p)
    L = _native.lib()
    args = _native.GemmArgs(4)  # smaller than the pointers A..D: refused before the (null) Gemm is looked at
    assert L.gt_gemm_run_args(None, ctypes.byref(args), None) == 2
    assert "too small" in L.gt_last_error().decode()


def test_impossible_values_are_invalid_input_naming_the_field():
    p = gt.Problem.make(64, 64, 64)
    p.a.align = 2**32 + 16
    with pytest.raises(gt.InvalidInputError, match="align"):
        p.check()
    p = gt.Problem.make(64, 64, 64, batch=2)
    p.b.batch_stride = -7
    with pytest.raises(gt.InvalidInputError, match="batch_stride=-7"):
        p.validate()
    with pytest.raises(gt.InvalidInputError, match=r"Problem\.m must be an integer \(got 64\.9\)"):
        gt.Problem(64.9, 64, 64).check()
    with pytest.raises(gt.InvalidInputError, match="Problem.a.ld"):
        gt.Problem(64, 64, 64, a=gt.Operand("bf16", "row", ld=True)).check()
    with pytest.raises(gt.InvalidInputError, match="too small for a float"):
        gt.Problem(64, 64, 64, alpha=1e-50).validate()
    with pytest.raises(gt.InvalidInputError, match="at most 16"):
        gt.Problem.make(64, 64, 64, epilogue=",".join(["relu"] * 17)).validate()


def test_unknown_backends_and_candidates_are_invalid_input():
    p = gt.Problem.make(256, 256, 256)
    with pytest.raises(gt.InvalidInputError, match="unknown backend 'nosuch'"):
        gt.compile(p, only="nosuch:x")
    with pytest.raises(gt.InvalidInputError, match="unknown backend 'nosuch'"):
        gt.candidates(p, backends=["nosuch"])
    with pytest.raises(gt.InvalidInputError, match="unknown backend 'nosuch'"):
        gt.Tuner(backends=["nosuch"]).tune(p)
    # Validated before the GPU is needed: the same error with or without one.
    with pytest.raises(gt.InvalidInputError, match="sm90"):
        gt.Tuner.load(p, "sm90:x")
