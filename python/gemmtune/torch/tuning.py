"""Tuning a list of GEMM problems once for a whole job: `tune(problems, distributed=True)`.

Every rank of a job (torchrun, or any launcher that sets RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT) calls
tune() with the same list. The ranks take problems from one queue held in torch.distributed's key-value store (the
default process group's, or the launcher's env:// rendezvous): a counter the store increments atomically, so
a rank that tunes slowly takes fewer problems. Each rank tunes its problems on its own GPU and publishes the result
cache's record of each; at the end every rank imports every other rank's records into its result cache, so each
rank (and each host, whatever its GEMMTUNE_CACHE_DIR) answers every problem from its cache afterwards.

A rank that dies loses only the problem it was tuning: the others notice that its heartbeat (a counter it increments
in the store) stopped, finish the queue, and report that problem as missing. Nothing here needs a GPU but the
default runner (tests pass their own).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable, Iterable, Optional, Sequence, Tuple, Union

import torch

from .. import _native
from .. import cache
from .._api import Problem, Tuner, problem_from_dict
from .._errors import CudaError, Error, InvalidInputError, NoGpuError

# A runner tunes one problem and returns (the result cache's key, its record).
Runner = Callable[[Problem], Tuple[str, dict]]
_calls = 0  # tune() calls of this process: the n-th call of every rank shares one key prefix


@dataclass
class TuneSummary:
    """What tune() did on this rank. `missing`: problems no rank finished (their rank died while tuning them);
    `failed`: problem -> the error its rank reported (no candidate passed, a bad problem)."""

    problems: int
    rank: int
    world_size: int
    tuned_here: list = field(default_factory=list)
    imported: int = 0
    missing: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    dead_ranks: list = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.missing and not self.failed


def problems_of(model: torch.nn.Module, shapes) -> list:
    """The distinct GEMM problems the gemmtune Linears of `model` (after optimize(), or built directly) run for the
    inputs in `shapes` (token counts or leading dims, as optimize's), as the op plans them: what tune() needs to
    answer every later call from the result cache. MoE experts modules are left out (tuned on first use)."""
    from . import _dispatch
    from .modules import distinct_gemms
    out, seen = [], set()
    for spec in distinct_gemms(model, shapes):
        mod = model.get_submodule(spec.modules[0]) if spec.modules[0] != "<model>" else model
        x = torch.empty(spec.m, spec.k, dtype=spec.dtype, device="meta")
        plan = _dispatch.build("gemmtune.linear", x, mod.weight, kind="linear", fake=True, epilogue=mod.epilogue,
                               bias=mod.bias)
        if plan.problem is not None and plan.key not in seen:
            seen.add(plan.key)
            out.append(plan.problem)
    if not out:
        raise InvalidInputError("gemmtune.torch.tune: the model has no gemmtune Linear (run gemmtune.torch.optimize "
                                "on it first)")
    return out


def _problems(problems: Iterable[Union[Problem, dict, str]]) -> list:
    out = []
    for i, p in enumerate(problems):
        if isinstance(p, Problem):
            out.append(p)
        elif isinstance(p, dict):
            out.append(problem_from_dict(p))
        elif isinstance(p, str):
            out.append(problem_from_dict(json.loads(p)))
        else:
            raise InvalidInputError(f"gemmtune.torch.tune: problem {i} is a {type(p).__name__}, not a "
                                    "gemmtune.Problem, a problem dict or its JSON")
    return out


def tuner_runner(tuner: Optional[Tuner] = None, device: Optional[int] = None) -> Runner:
    """The default runner: tunes on `device` (default: LOCAL_RANK's GPU under a launcher, else the current one)
    with `tuner` (default: Tuner() with its defaults) and returns the winner's result-cache record."""
    tuner = tuner or Tuner()
    state = {"bound": False}

    def run(p: Problem) -> Tuple[str, dict]:
        if not state["bound"]:
            dev = device
            if dev is None and torch.cuda.is_available():
                local, count = os.environ.get("LOCAL_RANK"), torch.cuda.device_count()
                dev = int(local) % count if local is not None else torch.cuda.current_device()
                if int(os.environ.get("LOCAL_WORLD_SIZE", 1)) > count:
                    warnings.warn(f"gemmtune.torch.tune: {os.environ['LOCAL_WORLD_SIZE']} ranks share this host's "
                                  f"{count} GPU(s): their timings contend, so winners may differ from a tune alone")
            if dev is not None:
                # The rank's device for the whole process and what it starts: the library's default device and
                # the tuner's worker (which also follows the context made current below) agree on it.
                os.environ["GEMMTUNE_DEVICE"] = str(int(dev))
                st = _native.lib().gt_use_device(int(dev))
                if st != 0:
                    _native.raise_for(st)
            state["bound"] = True
        report = tuner.tune(p)
        if report.winner is None:
            raise Error(f"no candidate passed for {p.str()}")
        entry = cache.get(report.cache_key)
        if entry is None:
            raise Error(f"the result cache holds no entry for {p.str()} after tuning (is GEMMTUNE_CACHE_DIR or "
                        "HOME set, and use_cache on?)")
        return entry["key"], entry["record"]
    return run


def _import(records: Sequence[dict]) -> int:
    if not records:
        return 0
    fd, path = tempfile.mkstemp(prefix="gemmtune_import_", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"gemmtune_cache": 1, "entries": list(records)}, f)
        return cache.import_file(path)
    finally:
        os.unlink(path)


def _default_store(timeout: timedelta):
    """(store, rank, world size) of the default process group, or of the launcher's env:// rendezvous."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        from torch.distributed import distributed_c10d as c10d
        return c10d._get_default_store(), dist.get_rank(), dist.get_world_size()
    need = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    missing = [v for v in need if v not in os.environ]
    if missing:
        raise InvalidInputError(
            "gemmtune.torch.tune(distributed=True): no process group is initialized and " + ", ".join(missing) +
            " not set: run under torchrun (or another launcher that sets them), or call "
            "torch.distributed.init_process_group first, or pass store=, rank= and world_size=")
    # The launcher's rendezvous (torch's env:// handler): under torchrun its agent's store, else one rank 0 serves.
    store, rank, world = next(torch.distributed.rendezvous("env://", timeout=timeout))
    return store, rank, world


def _say(progress, msg: str) -> None:
    if progress:
        (progress if callable(progress) else lambda m: print(m, file=sys.stderr, flush=True))(msg)


def tune(problems: Union[Iterable[Union[Problem, dict, str]], torch.nn.Module], shapes=None, *,
         distributed: Optional[bool] = None, tuner:
         Optional[Tuner] = None, runner: Optional[Runner] = None, store=None, rank: Optional[int] = None,
         world_size: Optional[int] = None, dead_after_s: float = 120.0, heartbeat_s: float = 2.0,
         timeout_s: float = 1800.0, progress=None) -> TuneSummary:
    """Tunes every problem once across the job and leaves every winner in each rank's result cache.

    problems: gemmtune Problems (or their dicts or JSON), or a model whose gemmtune Linears to tune for the inputs
    in `shapes` (problems_of). distributed: None = when a process group is initialized or WORLD_SIZE > 1; False = this process tunes the whole
    list. tuner / runner: how one problem is tuned (default: Tuner() on this rank's GPU, see tuner_runner).
    store, rank, world_size: a torch.distributed Store to coordinate through instead of the default group's.
    dead_after_s: a rank whose heartbeat has not moved for this long is taken as dead and its in-flight problem is
    reported missing. timeout_s: the longest a store operation may wait. progress: True prints a line per problem
    on stderr, or a callable taking the line."""
    global _calls
    t0 = time.perf_counter()
    if isinstance(problems, torch.nn.Module):
        if shapes is None:
            raise InvalidInputError("gemmtune.torch.tune(model): pass shapes=, the token counts or input shapes to "
                                    "tune for (as optimize's)")
        plist = problems_of(problems, shapes)
    else:
        plist = _problems(problems)
    run = runner or tuner_runner(tuner)
    if distributed is None:
        import torch.distributed as dist
        distributed = store is not None or (dist.is_available() and dist.is_initialized()
                                            and dist.get_world_size() > 1) or int(os.environ.get("WORLD_SIZE", 1)) > 1
    if not distributed:
        s = TuneSummary(problems=len(plist), rank=0, world_size=1)
        for p in plist:
            try:
                run(p)
                s.tuned_here.append(p.str())
                _say(progress, f"gemmtune tune: {p.str()}")
            except (NoGpuError, CudaError):
                raise
            except Error as e:
                s.failed[p.str()] = str(e)
        s.wall_s = time.perf_counter() - t0
        return s

    timeout = timedelta(seconds=timeout_s)
    if store is None:
        store, r, w = _default_store(timeout)
        rank = r if rank is None else rank
        world_size = w if world_size is None else world_size
    if rank is None or world_size is None:
        raise InvalidInputError("gemmtune.torch.tune: with store= pass rank= and world_size= too")
    if not 0 <= rank < world_size:
        raise InvalidInputError(f"gemmtune.torch.tune: rank {rank} is outside world size {world_size}")
    _calls += 1
    kv = torch.distributed.PrefixStore(f"gemmtune/tune/{_calls}", store)  # keys "<prefix>/<key>"
    kv.set_timeout(timeout)
    return _tune_shared(plist, run, kv, rank, world_size, dead_after_s, heartbeat_s, progress, t0)


def _digest(plist: list) -> str:
    return hashlib.sha256("\n".join(p.to_json() for p in plist).encode()).hexdigest()[:32]


def _tune_shared(plist, run, kv, rank, world, dead_after_s, heartbeat_s, progress, t0) -> TuneSummary:
    n = len(plist)
    s = TuneSummary(problems=n, rank=rank, world_size=world)
    # Every rank must hold the same list: the queue hands out indices.
    kv.set(f"digest/{rank}", _digest(plist))
    want = kv.get("digest/0").decode() if rank else _digest(plist)
    if want != _digest(plist):
        raise InvalidInputError(f"gemmtune.torch.tune: rank {rank}'s problem list differs from rank 0's (every rank "
                                "must pass the same problems in the same order)")

    stop = threading.Event()

    def beat():
        while not stop.is_set():
            try:
                kv.add(f"hb/{rank}", 1)
            except Exception:  # noqa: BLE001 - the store went away: the job is ending
                return
            stop.wait(heartbeat_s)
    hb = threading.Thread(target=beat, name="gemmtune-tune-heartbeat", daemon=True)
    hb.start()
    try:
        while True:
            i = kv.add("next", 1) - 1
            if i >= n:
                break
            p = plist[i]
            kv.set(f"claim/{i}", str(rank))
            try:
                key, record = run(p)
                kv.set(f"rec/{i}", json.dumps({"key": key, "record": record}))
                s.tuned_here.append(p.str())
                _say(progress, f"gemmtune tune [rank {rank}] {i + 1}/{n}: {p.str()}")
            except (NoGpuError, CudaError):
                raise  # this rank's GPU, not the problem: stop here rather than fail the whole queue quickly
            except Error as e:
                kv.set(f"err/{i}", str(e))
                _say(progress, f"gemmtune tune [rank {rank}] {i + 1}/{n}: {p.str()} failed: {e}")
            kv.add("done", 1)
        kv.set(f"fin/{rank}", "1")
        s.dead_ranks = _wait(kv, n, rank, world, dead_after_s, heartbeat_s)
    finally:
        stop.set()
    records = []
    for i, p in enumerate(plist):
        if kv.check([f"rec/{i}"]):
            doc = json.loads(kv.get(f"rec/{i}"))
            if kv.get(f"claim/{i}").decode() != str(rank):
                records.append(doc["record"])
        elif kv.check([f"err/{i}"]):
            s.failed[p.str()] = kv.get(f"err/{i}").decode()
        else:
            s.missing.append(p.str())
    s.imported = _import(records)
    s.wall_s = time.perf_counter() - t0
    if s.missing:
        _say(progress or True, f"gemmtune tune [rank {rank}]: {len(s.missing)} of {n} problems missing (rank(s) "
                               f"{', '.join(map(str, s.dead_ranks)) or '?'} stopped while tuning them): "
                               + "; ".join(s.missing))
    return s


def _wait(kv, n, rank, world, dead_after_s, heartbeat_s) -> list:
    """Waits until every problem is done or every rank still tuning has stopped beating; returns the dead ranks.
    The done count is read every half second; the other ranks' heartbeats less often (a few store reads per rank),
    so that a job of many ranks does not flood the store while its last problems finish."""
    seen = {}  # rank -> (heartbeat count, when it last moved, on this process's clock)
    finished = {rank}
    poll = min(0.5, max(heartbeat_s / 2, 0.05))
    scan_every = max(poll, min(dead_after_s / 4, 10.0))
    next_scan = 0.0
    while True:
        if kv.add("done", 0) >= n:
            return []
        now = time.monotonic()
        if now >= next_scan:
            next_scan = now + scan_every
            dead, waiting = [], False
            for r in range(world):
                if r in finished:
                    continue
                if kv.check([f"fin/{r}"]):
                    finished.add(r)
                    continue
                count = kv.add(f"hb/{r}", 0)
                last = seen.get(r)
                if last is None or last[0] != count:
                    seen[r] = (count, now)
                    waiting = True
                elif now - last[1] < dead_after_s:
                    waiting = True
                else:
                    dead.append(r)
            if not waiting:
                return dead
        time.sleep(poll)


# ---------------------------------------------------------------------------------------------------------------
# `gemmtune tune --suite FILE` (python -m gemmtune.torch.tuning): a suite on every GPU of this host, or across the
# ranks of a launcher's job.
# ---------------------------------------------------------------------------------------------------------------

def _cli_path() -> str:
    """The gemmtune command-line binary: $GEMMTUNE_CLI, the package's bin/gemmtune, or the one beside the library
    GEMMTUNE_LIBRARY names (a build tree)."""
    import gemmtune
    places = [os.environ.get("GEMMTUNE_CLI", ""),
              os.path.join(os.path.dirname(os.path.abspath(gemmtune.__file__)), "bin", "gemmtune"),
              os.path.join(os.path.dirname(os.environ.get("GEMMTUNE_LIBRARY", "")), "gemmtune")]
    for p in places:
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    raise Error("gemmtune tune --suite: the gemmtune binary that reads suites is not found (set GEMMTUNE_CLI, or "
                "install a wheel built with the command line)")


def suite_problems(path: str, filter: str = "", shard: str = "") -> list:
    """(name, Problem) of each shape of a suite file, as `gemmtune bench --suite` reads it (--filter, --shard)."""
    import subprocess
    cmd = [_cli_path(), "bench", "--suite", path, "--list-shapes"]
    cmd += ["--filter", filter] if filter else []
    cmd += ["--shard", shard] if shard else []
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise InvalidInputError(r.stderr.strip().removeprefix("error: ") or f"{cmd[0]} exited with {r.returncode}")
    return [(s["name"], problem_from_dict(s["problem"])) for s in json.loads(r.stdout)["shapes"]]


def _runner_from(spec: str) -> Runner:
    """--runner MODULE:FUNCTION, a runner of one's own (the tests' fake one)."""
    import importlib
    mod, _, fn = spec.partition(":")
    if not mod or not fn:
        raise InvalidInputError(f"--runner '{spec}': expected MODULE:FUNCTION")
    return getattr(importlib.import_module(mod), fn)


def _summary_json(s: TuneSummary) -> dict:
    return {"rank": s.rank, "world_size": s.world_size, "problems": s.problems, "tuned_here": s.tuned_here,
            "imported": s.imported, "missing": s.missing, "failed": s.failed, "dead_ranks": s.dead_ranks,
            "wall_s": round(s.wall_s, 3)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(
        prog="gemmtune tune --suite",
        description="Tunes every shape of a suite once: on every GPU of this host (one process per GPU taking "
                    "shapes from one queue), or, under torchrun or another launcher that sets RANK / WORLD_SIZE / "
                    "MASTER_ADDR / MASTER_PORT, across the ranks of the job. Each process's winners end in every "
                    "process's result cache.")
    ap.add_argument("--suite", required=True, help="suite file, as `gemmtune bench --suite`")
    ap.add_argument("--filter", default="", help="only shapes whose name contains this")
    ap.add_argument("--backends", default=None, help="comma-separated backends (default: the library's)")
    ap.add_argument("--top-k", type=int, default=8, help="candidates per backend (default 8)")
    ap.add_argument("--devices", default="all",
                    help="GPUs of this host to use, e.g. 0,1 (default: all visible); ignored under a launcher")
    ap.add_argument("--distributed", action="store_true",
                    help="require a launcher's environment (RANK, WORLD_SIZE, ...) instead of this host's GPUs")
    ap.add_argument("--dead-after", type=float, default=120.0,
                    help="seconds without a heartbeat after which a process counts as dead (default 120)")
    ap.add_argument("--json", default="", help="write the summary as JSON to this file")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--runner", default="", help=argparse.SUPPRESS)  # MODULE:FUNCTION instead of the tuner
    ap.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)  # a process this command started
    ap.add_argument("--world", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--store", default="", help=argparse.SUPPRESS)
    ap.add_argument("--device", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        plist = [p for _, p in suite_problems(args.suite, args.filter)]
        tuner = Tuner(backends=args.backends.split(",") if args.backends else None, top_k=args.top_k)
        run = _runner_from(args.runner) if args.runner else None
        progress = not args.quiet
        common = dict(dead_after_s=args.dead_after, progress=progress)
        if args.rank >= 0:  # one of this host's processes, started below
            store = torch.distributed.FileStore(args.store, args.world)
            s = tune(plist, runner=run or tuner_runner(tuner, args.device), store=store, rank=args.rank,
                     world_size=args.world, **common)
            print(json.dumps(_summary_json(s)), flush=True)
            return 0
        launched = int(os.environ.get("WORLD_SIZE", "1")) > 1
        if args.distributed and not launched:
            raise InvalidInputError("--distributed: WORLD_SIZE is not set above 1 (run under torchrun or another "
                                    "launcher)")
        if launched:
            s = tune(plist, distributed=True, runner=run or tuner_runner(tuner), **common)
            out = _summary_json(s)
        else:
            if args.devices == "all":
                devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
            else:
                try:
                    devices = [int(d) for d in args.devices.split(",")]
                except ValueError:
                    raise InvalidInputError(f"--devices '{args.devices}': expected all or GPU indices like 0,1")
            if not devices and run is None:
                raise Error("no GPU is visible (CUDA_VISIBLE_DEVICES, the driver)")
            if len(devices) <= 1:
                s = tune(plist, distributed=False, runner=run or tuner_runner(tuner, devices[0] if devices else None),
                         **common)
                out = _summary_json(s)
            else:
                out = _spawn(argv if argv is not None else sys.argv[1:], devices)
        text = json.dumps(out, indent=1)
        if args.json:
            with open(args.json, "w") as f:
                f.write(text + "\n")
        n_missing, n_failed = len(out["missing"]), len(out["failed"])
        print(f"gemmtune tune: {out['problems']} shapes, {n_missing} missing, {n_failed} failed, "
              f"{out['wall_s']:.1f} s", file=sys.stderr)
        return 0 if not n_missing and not n_failed else 1
    except Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, InvalidInputError) else 1


def _spawn(argv: Sequence[str], devices: list) -> dict:
    """One process per device on a FileStore in a temporary directory; their summaries merged."""
    import subprocess
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gemmtune_tune_") as d:
        store = os.path.join(d, "store")
        procs = [subprocess.Popen([sys.executable, "-m", "gemmtune.torch.tuning", *argv, "--rank", str(r), "--world",
                                   str(len(devices)), "--store", store, "--device", str(dev)],
                                  stdout=subprocess.PIPE, text=True, env=dict(os.environ, GEMMTUNE_DEVICE=str(dev)))
                 for r, dev in enumerate(devices)]
        outs = [p.communicate()[0] for p in procs]
    docs = []
    for r, (p, out) in enumerate(zip(procs, outs)):
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if p.returncode == 0 and lines:
            docs.append(json.loads(lines[-1]))
        else:
            print(f"gemmtune tune: the process of GPU {devices[r]} exited with status {p.returncode}",
                  file=sys.stderr)
    if not docs:
        raise Error("every tuning process failed")
    first = docs[0]
    return {"problems": first["problems"], "devices": devices, "processes_finished": len(docs),
            "tuned": {str(devices[d["rank"]]): len(d["tuned_here"]) for d in docs},
            "missing": first["missing"], "failed": first["failed"], "dead_ranks": first["dead_ranks"],
            "wall_s": round(time.perf_counter() - t0, 3)}


if __name__ == "__main__":
    sys.exit(main())
