"""gemmtune.torch.tune(distributed=True) on the CPU: ranks in separate processes coordinate through a gloo process
group's store, each with its own result cache (as separate hosts would have), and a fake runner in place of the GPU
tuner. Every rank's cache ends up with every problem; a rank that dies mid-tune loses only its in-flight problem."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)


# One rank: joins a gloo group through a file, tunes the list with a fake runner that writes what a tune would
# (a record in its own cache), fails on M = 320 wherever that lands, and, as rank `die`, exits with its first problem
# in flight; then prints its summary and cache keys as JSON.
RANK = textwrap.dedent("""
    import json, os, sys, time
    import torch.distributed as dist
    import gemmtune, gemmtune.torch as gt
    rank, world, init, die = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    dist.init_process_group("gloo", init_method="file://" + init, rank=rank, world_size=world)
    probs = [gemmtune.Problem.make(64 * (i + 1), 128, 256) for i in range(7)]
    def fake(p):
        if rank == die:
            os._exit(3)
        if p.m == 320:
            raise gemmtune.Error("no candidate passed for a fake reason")
        time.sleep(0.4 if rank == 0 else 0.05)  # rank 0 is slow
        key = p.key() + "|fake-gpu"
        rec = {"key": key, "problem": json.loads(p.to_json()), "device": {"name": "fake"},
               "winner": "sm90:fake", "us": 1.0, "results": []}
        path = os.path.join(os.environ["GEMMTUNE_CACHE_DIR"], "one.json")
        with open(path, "w") as f:
            json.dump({"gemmtune_cache": 1, "entries": [rec]}, f)
        gemmtune.cache.import_file(path)
        return key, rec
    s = gt.tune(probs, distributed=True, runner=fake, dead_after_s=3.0, heartbeat_s=0.1)
    print(json.dumps({"tuned": len(s.tuned_here), "imported": s.imported, "missing": s.missing,
                      "failed": list(s.failed), "dead": s.dead_ranks,
                      "keys": sorted(e["key"] for e in gemmtune.cache.entries()),
                      "expected": [p.key() + "|fake-gpu" for p in probs]}))
    dist.destroy_process_group()
""")


def _run(tmp_path, world, die=-1):
    env = dict(os.environ)  # the children import the gemmtune this test imports (installed, or PYTHONPATH's)
    procs = []
    for r in range(world):
        cache_dir = tmp_path / f"cache{r}"
        cache_dir.mkdir()
        procs.append(subprocess.Popen([sys.executable, "-c", RANK, str(r), str(world), str(tmp_path / "init"),
                                       str(die)], env=dict(env, GEMMTUNE_CACHE_DIR=str(cache_dir)),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        outs.append((p.returncode, json.loads(out.strip().splitlines()[-1]) if p.returncode == 0 else None, err))
    return outs


def test_every_rank_gets_every_problem(tmp_path):
    outs = _run(tmp_path, 3)
    for rc, _, err in outs:
        assert rc == 0, err
    docs = [d for _, d, _ in outs]
    expected = docs[0]["expected"]
    good = [k for k in expected if ":m320:" not in k]
    # Together the ranks tuned each problem once (M = 320 failed); the slow rank took fewer than a fast one.
    assert sum(d["tuned"] for d in docs) == 6
    assert docs[0]["tuned"] < max(d["tuned"] for d in docs[1:])
    for d in docs:
        assert d["missing"] == [] and d["dead"] == [], d
        assert d["failed"] == ["--m=320 --n=128 --k=256 --A=bf16:row --B=bf16:col --D=bf16:row"], d
        assert d["keys"] == sorted(good), d  # each rank's own cache holds every tuned problem
        assert d["imported"] == 6 - d["tuned"], d


def test_a_dead_rank_loses_only_its_problem(tmp_path):
    outs = _run(tmp_path, 3, die=2)
    assert outs[2][0] == 3
    for rc, d, err in outs[:2]:
        assert rc == 0, err
        assert d["dead"] == [2], d
        assert len(d["missing"]) == 1, d  # the one rank 2 held when it died
        assert len(d["keys"]) == 5, d     # 7 less the failed and the missing one
        missing_m = int(d["missing"][0].split()[0].split("=")[1])
        assert missing_m != 320 or d["failed"] == [], d


def test_problem_lists_must_match(tmp_path):
    store = torch.distributed.HashStore()
    import gemmtune
    import gemmtune.torch as gt
    from gemmtune.torch import tuning
    store.set(f"gemmtune/tune/{tuning._calls + 1}/digest/0", "not this list")  # the next call's keys
    with pytest.raises(gemmtune.InvalidInputError, match="differs from rank 0"):
        gt.tune([gemmtune.Problem.make(64, 64, 64)], store=store, rank=1, world_size=2, runner=lambda p: None, timeout_s=5)


def test_not_distributed_tunes_the_whole_list():
    import gemmtune
    import gemmtune.torch as gt
    seen = []
    s = gt.tune([gemmtune.Problem.make(64, 64, 64), gemmtune.Problem.make(128, 64, 64)], distributed=False,
                runner=lambda p: seen.append(p.m))
    assert seen == [64, 128] and len(s.tuned_here) == 2 and s.complete


def test_problems_of_a_model():
    """A model's distinct GEMMs for the given inputs, as the op plans them (epilogue included), once each."""
    import gemmtune
    import gemmtune.torch as gt
    from gemmtune.torch import tuning
    from gemmtune.torch.modules import Linear
    m = torch.nn.Sequential(Linear(torch.empty(256, 64, dtype=torch.bfloat16)),
                            Linear(torch.empty(128, 128, dtype=torch.bfloat16), epilogue="silu_glu"),
                            Linear(torch.empty(256, 64, dtype=torch.bfloat16)))  # the first one's GEMM again
    ps = tuning.problems_of(m, [(2, 8), 32])
    assert [(p.m, p.n, p.k, p.epilogue) for p in ps] == [
        (16, 256, 64, "none"), (16, 128, 128, "silu_glu"), (32, 256, 64, "none"), (32, 128, 128, "silu_glu")]
    seen = []
    s = gt.tune(m, [(2, 8), 32], distributed=False, runner=lambda p: seen.append(p.str()))
    assert seen == [p.str() for p in ps] and s.problems == 4
    with pytest.raises(gemmtune.InvalidInputError, match="shapes="):
        gt.tune(m)
    with pytest.raises(gemmtune.InvalidInputError, match="no gemmtune Linear"):
        gt.tune(torch.nn.Linear(4, 4), [8], distributed=False)


FAKE_RUNNER = textwrap.dedent("""
    import json, time
    def fake(p):
        time.sleep(0.05)
        key = p.key() + "|fake-gpu"
        return key, {"key": key, "problem": json.loads(p.to_json()), "device": {"name": "fake"},
                     "winner": "sm90:fake", "us": 1.0, "results": []}
""")


def _suite_cmd(tmp_path, *args):
    """`gemmtune tune --suite` through the pip entry point, with the fake runner, in a fresh process."""
    from gemmtune.torch import tuning
    try:
        tuning._cli_path()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no gemmtune binary to read suites: {e}")
    (tmp_path / "fakerun.py").write_text(FAKE_RUNNER)
    suite = tmp_path / "s.json"
    suite.write_text(json.dumps({"name": "s", "shapes": [
        {"name": f"x{i}", "m": 64 * (i + 1), "n": 128, "k": 256} for i in range(5)]}))
    env = dict(os.environ, GEMMTUNE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p))
    env.pop("WORLD_SIZE", None)
    code = ("import sys; from gemmtune._cli import main; sys.argv = ['gemmtune', 'tune', '--suite', sys.argv[1]] + "
            "sys.argv[2:]; main()")
    return subprocess.run([sys.executable, "-c", code, str(suite), "--runner", "fakerun:fake", "--quiet", *args],
                          env=env, capture_output=True, text=True, timeout=120)


def test_tune_suite_on_this_hosts_processes(tmp_path):
    """`gemmtune tune --suite FILE --devices 0,1`: one process per device, one queue, every winner in the cache."""
    r = _suite_cmd(tmp_path, "--devices", "0,1", "--json", str(tmp_path / "sum.json"))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "sum.json").read_text())
    assert doc["problems"] == 5 and doc["processes_finished"] == 2 and sum(doc["tuned"].values()) == 5, doc
    assert doc["missing"] == [] and doc["failed"] == {}
    assert "5 shapes, 0 missing, 0 failed" in r.stderr
    entries = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, gemmtune; print(json.dumps(gemmtune.cache.entries()))"],
        env=dict(os.environ, GEMMTUNE_CACHE_DIR=str(tmp_path / "cache")),
        capture_output=True, text=True, check=True).stdout)
    assert len(entries) == 5 and all(e["record"]["winner"] == "sm90:fake" for e in entries)


def test_tune_suite_bad_arguments(tmp_path):
    r = _suite_cmd(tmp_path, "--devices", "zero")
    assert r.returncode == 2 and "--devices 'zero'" in r.stderr, r.stderr
    r = _suite_cmd(tmp_path, "--distributed")
    assert r.returncode == 2 and "WORLD_SIZE" in r.stderr, r.stderr
    r = _suite_cmd(tmp_path, "--filter", "nothing-matches")
    assert r.returncode == 2 and "matches no shape" in r.stderr, r.stderr


def test_a_gpu_error_stops_the_tune_instead_of_failing_every_problem():
    import gemmtune
    import gemmtune.torch as gt

    def no_gpu(p):
        raise gemmtune.NoGpuError("no CUDA driver")
    with pytest.raises(gemmtune.NoGpuError):
        gt.tune([gemmtune.Problem.make(64, 64, 64)] * 3, distributed=False, runner=no_gpu)


def test_the_runner_sends_the_tuner_worker_to_its_device(monkeypatch):
    """The worker that times candidates runs on GEMMTUNE_DEVICE (its inherited environment), not on the parent's
    current context: the runner of device 1 sets it before binding the device (which fails here, without a GPU)."""
    import gemmtune
    from gemmtune.torch import tuning
    monkeypatch.setenv("GEMMTUNE_DEVICE", "0")
    run = tuning.tuner_runner(gemmtune.Tuner(top_k=1), device=1)
    if gemmtune.gpu_available():
        pytest.skip("a GPU host: the binding would succeed and tune")
    with pytest.raises(gemmtune.Error):
        run(gemmtune.Problem.make(64, 64, 64))
    assert os.environ["GEMMTUNE_DEVICE"] == "1"
