"""The triton backend's templates and compile driver (kernels/triton/), without a GPU: the driver compiles a template
to an sm_90a cubin with the launch facts the C++ backend reads, and refuses a request whose argument list differs from
the template's. Skips where triton cannot be imported."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

TEMPLATES = Path(__file__).resolve().parents[2] / "kernels" / "triton"
DRIVER = TEMPLATES / "compile_driver.py"

# The run-time arguments of both templates, in order (src/backends/triton/triton_config.cpp make_request).
PARAMS = ([(n, "*bf16") for n in ("a_ptr", "b_ptr", "c_ptr", "d_ptr")] +
          [(n, "*fp32") for n in ("bias_ptr", "res_ptr", "rs_ptr", "cs_ptr", "sa_ptr", "sb_ptr")] +
          [(n, "i32") for n in ("M", "N", "K", "batch")] +
          [(n, "i64") for n in ("lda", "ldb", "ldc", "ldd", "sbat_a", "sbat_b", "sbat_c", "sbat_d")] +
          [("alpha", "fp32"), ("beta", "fp32")])
CONSTS = ["A_ROW", "B_ROW", "C_ROW", "D_ROW", "HAS_C", "SCALING"] + ["E%d" % i for i in range(8)] + ["BM", "BN", "BK",
                                                                                                    "GM"]


def request(chain=(), **over):
    ce = dict(A_ROW=1, B_ROW=0, C_ROW=1, D_ROW=1, HAS_C=0, SCALING=0, BM=64, BN=64, BK=32, GM=8)
    for i in range(8):
        ce["E%d" % i] = chain[i] if i < len(chain) else 0
    ce.update(over)
    sig = dict(PARAMS)
    sig.update({c: "constexpr" for c in ce})
    return {"module": "matmul_masked", "kernel": "matmul_masked", "signature": sig,
            "order": [n for n, _ in PARAMS] + CONSTS, "constexprs": ce, "divisibility": {"a_ptr": 16, "b_ptr": 16},
            "num_warps": 4, "num_stages": 2, "arch": 90}


def run_driver(tmp_path, req):
    (tmp_path / "request.json").write_text(json.dumps(req))
    return subprocess.run([sys.executable, str(DRIVER), str(TEMPLATES), str(tmp_path)], capture_output=True,
                          text=True, timeout=600, env=dict(os.environ))


def test_driver_compiles_a_cubin_with_launch_facts(tmp_path):
    r = run_driver(tmp_path, request(chain=(1, 4, 10)))  # bias, gelu_tanh, residual
    assert r.returncode == 0, r.stderr
    cubin = (tmp_path / "kernel.cubin").read_bytes()
    assert cubin[:4] == b"\x7fELF"
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["name"] == "matmul_masked"
    assert meta["num_warps"] == 4 and meta["num_ctas"] == 1
    assert [tuple(p) for p in meta["params"]] == PARAMS
    assert meta["global_scratch_size"] == 0  # no device-side descriptors in the masked template


def test_driver_refuses_a_wrong_argument_order(tmp_path):
    req = request()
    req["order"][0], req["order"][1] = req["order"][1], req["order"][0]
    r = run_driver(tmp_path, req)
    assert r.returncode != 0
    assert "takes" in r.stderr and not (tmp_path / "kernel.cubin").exists()


def test_warm_helper_answers_each_job_and_survives_a_failure(tmp_path):
    bad, good = tmp_path / "bad", tmp_path / "good"
    for d, req in ((bad, request()), (good, request(chain=(3,)))):
        d.mkdir()
        (d / "request.json").write_text(json.dumps(req))
    bad_req = json.loads((bad / "request.json").read_text())
    bad_req["order"].reverse()
    (bad / "request.json").write_text(json.dumps(bad_req))
    r = subprocess.run([sys.executable, str(DRIVER), "--serve", str(TEMPLATES)], input="%s\n%s\n" % (bad, good),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["error", "ok"]
    assert "takes" in (bad / "log.txt").read_text()  # the failure's traceback, in the job's log
    assert (good / "kernel.cubin").read_bytes()[:4] == b"\x7fELF"
