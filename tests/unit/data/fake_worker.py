#!/usr/bin/env python3
# A scripted stand-in for gemmtune-worker (tests/unit/test_worker_protocol.cpp): it speaks the worker protocol and
# fails the ways a real worker does (sticky errors reported, signals, hangs, setup failures), so that the tuner's
# recovery is tested on a machine without a GPU.
#   GEMMTUNE_TEST_FAKE_PLAN: JSON list, one entry per worker start (the last repeats): a list of requests, each a list
#     of actions: ["ok", i] (begin + an ok result), ["begin", i], ["result", i, status, reason], ["timing", [i...]],
#     ["fatal", msg], ["exit", code], ["signal", n], ["sleep", s], ["done"], ["all_ok"] (ok for every candidate, done)
#   GEMMTUNE_TEST_FAKE_STATE: a file holding the number of workers started so far; each request line is appended to
#     <state>.requests
import json, os, signal, sys, time

state = os.environ["GEMMTUNE_TEST_FAKE_STATE"]
plan = json.loads(os.environ["GEMMTUNE_TEST_FAKE_PLAN"])
try:
    start = int(open(state).read() or 0)
except FileNotFoundError:
    start = 0
open(state, "w").write(str(start + 1))
requests = plan[min(start, len(plan) - 1)]

def emit(ev):
    sys.stdout.write(json.dumps(ev) + "\n")
    sys.stdout.flush()

for n, line in enumerate(sys.stdin):
    with open(state + ".requests", "a") as f:
        f.write(line)
    req = json.loads(line)
    results = req["results"]
    def result(i, status, reason=""):
        r = dict(results[i])
        r["status"], r["reason"] = status, reason
        if status == "ok":
            r["us_median"], r["timed_iters"] = 10.0 + i, 100
        emit({"event": "result", "index": i, "result": r})
    for a in requests[min(n, len(requests) - 1)]:
        op = a[0]
        if op == "ok":
            emit({"event": "begin", "index": a[1]}); result(a[1], "ok")
        elif op == "all_ok":
            for i in range(len(results)):
                emit({"event": "begin", "index": i}); result(i, "ok")
            emit({"event": "done"})
        elif op == "begin":
            emit({"event": "begin", "index": a[1]})
        elif op == "result":
            result(a[1], a[2], a[3])
        elif op == "timing":
            emit({"event": "timing", "indices": a[1]})
        elif op == "fatal":
            emit({"event": "fatal", "message": a[1]})
        elif op == "exit":
            sys.exit(a[1])
        elif op == "signal":
            os.kill(os.getpid(), a[1])
        elif op == "sleep":
            time.sleep(a[1])
        elif op == "done":
            emit({"event": "done"})
