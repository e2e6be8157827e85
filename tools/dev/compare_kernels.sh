#!/usr/bin/env bash
# Checks that a change left the JIT kernels alone: same SASS per kernel and the same top-k candidates, old vs new binary.
#
# Usage: tools/dev/compare_kernels.sh OLD_GEMMTUNE NEW_GEMMTUNE [PROBLEMS_FILE]
#   PROBLEMS_FILE: one problem per line as `gemmtune compile` flags (default: the varied set below).
#   TOPK (env, default 16): candidates compiled per backend and problem (0 = the whole lists).
#   K (env, default 8): the tuner's top k; the new list's first K candidates without spills must be the old top K.
#   OUT (env, default a temp dir): where dumps, lists and the report go.
# Without a GPU: compiles through NVRTC only (`gemmtune compile`), no kernel runs.
set -euo pipefail
old=$1 new=$2 problems=${3:-}
TOPK=${TOPK:-16} K=${K:-8}
OUT=${OUT:-$(mktemp -d /tmp/compare_kernels.XXXXXX)}
mkdir -p "$OUT"
# cuobjdump (and the nvdisasm it runs) on PATH or in CUOBJDUMP; the CUDA toolkit or PyPI's nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm have them.
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
"$cuobjdump" --version >/dev/null || { echo "no cuobjdump (set CUOBJDUMP)" >&2; exit 1; }

default_problems() {
  cat <<'EOF'
--m 4096 --n 4096 --k 4096
--m 8192 --n 28672 --k 4096
--m 16 --n 4096 --k 14336
--m 1 --n 4096 --k 4096
--m 4096 --n 4096 --k 4096 --D bf16:col
--m 4096 --n 4096 --k 4096 --B bf16:row
--m 4096 --n 4096 --k 4096 --A f16:row --B f16:col --D f16:row
--m 4096 --n 4096 --k 4096 --D f32:row
--m 4096 --n 4096 --k 4096 --beta 1
--m 4096 --n 4096 --k 4096 --epilogue bias,gelu_tanh
--m 4096 --n 8192 --k 4096 --epilogue swiglu
--m 4096 --n 4096 --k 4096 --epilogue bias,residual
--m 4096 --n 4095 --k 4096 --ldb 4096 --ldd 4096
--m 1024 --n 1024 --k 1024 --batch 4
EOF
}
if [ -n "$problems" ]; then cat "$problems"; else default_problems; fi >"$OUT/problems.txt"

report="$OUT/report.txt"
: >"$report"
i=0
while read -r prob; do
  [ -z "$prob" ] && continue
  i=$((i + 1))
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    # The list (ranked, hard-valid candidates) and a compile of its first TOPK per backend: spills and the cubins.
    # A cache per side and run dedupes the kernels problems share (the dump holds each compiled kernel once).
    $bin list $prob --backends sm90,gemv --top-k 0 2>/dev/null | grep -v '^#' >"$OUT/$side.list.$i" || true
    GEMMTUNE_DUMP_DIR="$OUT/$side.dump" GEMMTUNE_CACHE_DIR="$OUT/$side.cache" \
      $bin compile $prob --backends sm90,gemv --top-k "$TOPK" -q --json "$OUT/$side.compile.$i.json" >/dev/null 2>&1 || true
  done
  # The new list's first K candidates (per backend) that compile without spills against the old top K.
  python3 - "$OUT" "$i" "$K" "$prob" >>"$report" <<'PY'
import json, sys
out, i, k, prob = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def lst(side):
    return [l.strip() for l in open(f"{out}/{side}.list.{i}") if l.strip()]
def spills(side):
    try:
        j = json.load(open(f"{out}/{side}.compile.{i}.json"))
    except Exception:
        return {}
    return {c["candidate"]: (c["spill_bytes"] if c.get("compiled") else None) for c in j["candidates"]}
old, new, sp = lst("old"), lst("new"), spills("new")
verdicts = []
for be in ("sm90", "gemv"):
    o = [c for c in old if c.startswith(be + ":")][:k]
    n_all = [c for c in new if c.startswith(be + ":")]
    n, undecided = [], False
    for c in n_all:
        if len(n) == len(o):
            break
        if c not in sp:
            undecided = True
            break
        if sp[c] == 0:
            n.append(c)
    if not o and not n_all:
        continue
    dropped = [c for c in n_all[: n_all.index(n[-1]) + 1] if sp.get(c) != 0] if n else []
    if undecided and n != o[: len(n)]:
        verdicts.append(f"{be}: DIFFERENT within the compiled part")
    elif undecided:
        verdicts.append(f"{be}: undecided (raise TOPK): first {len(n)} equal")
    elif n == o:
        n_old = sum(c.startswith(be + ":") for c in old)
        verdicts.append(f"{be}: top {len(o)} equal ({n_old} -> {len(n_all)} listed, {len(dropped)} spilling skipped)")
    else:
        verdicts.append(f"{be}: DIFFERENT top {k}: old {o} new {n}")
print(f"[{i}] {prob}: " + "; ".join(verdicts))
PY
done <"$OUT/problems.txt"

# SASS per kernel present in both dumps. sm90 kernels keep their names (a hash of config and problem class); the
# kernel name is masked anyway so that a renamed kernel compares by its code.
same=0 diff=0 only_old=0 only_new=0
norm() {
  local sass
  sass=$("$cuobjdump" -sass "$1") || { echo "cuobjdump failed on $1" >&2; exit 1; }
  [ -n "$sass" ] || { echo "no SASS in $1" >&2; exit 1; }
  sed -E 's/gt_(sm90|gemv)_[A-Za-z0-9_]+/KERNEL/g' <<<"$sass" | grep -v '^\s*$'
}
for f in "$OUT"/old.dump/*.cubin; do
  [ -e "$f" ] || continue
  n="$OUT/new.dump/$(basename "$f")"
  if [ ! -e "$n" ]; then only_old=$((only_old + 1)); continue; fi
  if cmp -s <(norm "$f") <(norm "$n"); then same=$((same + 1)); else diff=$((diff + 1)); echo "SASS differs: $(basename "$f")" >>"$report"; fi
done
for f in "$OUT"/new.dump/*.cubin; do
  [ -e "$f" ] || continue
  [ -e "$OUT/old.dump/$(basename "$f")" ] || only_new=$((only_new + 1))
done
echo "SASS: $same kernels identical, $diff different, $only_old only in old, $only_new only in new" >>"$report"
cat "$report"
echo "(files in $OUT)"
