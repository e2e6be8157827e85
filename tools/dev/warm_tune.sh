#!/usr/bin/env bash
# Wall time of a warm `gemmtune tune` (answered from the result cache) in a new process, and what CUDA's own start
# costs on this host (dlopen of libcuda, cuInit, primary context), which a cache hit pays only in part: it needs
# cuInit for the device's name, SMs and driver (the cache key), not a context.
#   [WARM_ARGS='--m M --n N --k K ...'] tools/dev/warm_tune.sh [GEMMTUNE_BIN] [RUNS]   (GPU host; default build/gemmtune, 5 runs)
# The first tune fills a throw-away result cache (a cold tune: tens of seconds); each timed run then prints its wall
# time. It also says whether a warm run started Python (GEMMTUNE_PYTHON is wrapped by a script that leaves a mark) or
# loaded NVRTC or cuBLASLt (LD_DEBUG=files): a cache hit of an sm90 winner should do neither.
set -euo pipefail
bin=${1:-build/gemmtune}
runs=${2:-5}
# WARM_ARGS: the tune's problem and options (default: 4096^3 bf16, every backend).
read -r -a shape <<<"${WARM_ARGS:---m 4096 --n 4096 --k 4096}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GEMMTUNE_CACHE_DIR=$work/cache
real_py=${GEMMTUNE_PYTHON:-$(command -v python3)}
printf '#!/bin/sh\necho "$*" >> %q\nexec %q "$@"\n' "$work/python-started" "$real_py" > "$work/python"
chmod +x "$work/python"
export GEMMTUNE_PYTHON=$work/python

echo "filling the cache: $bin tune ${shape[*]}"
"$bin" tune "${shape[@]}" -q | tail -1
rm -f "$work/python-started"

TIMEFORMAT="warm tune: %R s wall, %U s user, %S s sys"
for _ in $(seq "$runs"); do
  time "$bin" tune "${shape[@]}" -q > "$work/out"
done
tail -1 "$work/out"  # the CLI's own line: "winner: ... | cache hit | ... | wall N ms" (N: Tuner::tune inside)
LD_DEBUG=files "$bin" tune "${shape[@]}" -q 2> "$work/ld" > /dev/null
for lib in libnvrtc libcublasLt libcuda; do
  # A load generates a link map; a lookup with RTLD_NOLOAD (the version probes of the cache key) prints only "file=".
  if grep -q "file=$lib.*generating link map" "$work/ld"; then echo "warm tune loads $lib"
  else echo "warm tune does not load $lib"; fi
done
if [ -s "$work/python-started" ]; then echo "warm tune started Python: $(sort -u "$work/python-started" | head -3)"
else echo "warm tune started no Python"; fi

# CUDA's own start, measured in one process (Python's start is outside the clock).
"$real_py" - <<'PY'
import ctypes, time
t0 = time.perf_counter()
cu = ctypes.CDLL("libcuda.so.1")
t1 = time.perf_counter()
assert cu.cuInit(0) == 0
t2 = time.perf_counter()
dev = ctypes.c_int()
cu.cuDeviceGet(ctypes.byref(dev), 0)
ctx = ctypes.c_void_p()
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
t3 = time.perf_counter()
print(f"CUDA start: dlopen libcuda {1e3*(t1-t0):.1f} ms, cuInit {1e3*(t2-t1):.1f} ms, "
      f"primary context {1e3*(t3-t2):.1f} ms (a warm tune pays the first two)")
PY
