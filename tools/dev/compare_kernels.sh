#!/usr/bin/env bash
# Checks that a change left the JIT kernels alone: same SASS per kernel and the same top-k candidates, old vs new binary.
#
# Usage: tools/dev/compare_kernels.sh OLD_GEMMTUNE NEW_GEMMTUNE [PROBLEMS_FILE]
#   PROBLEMS_FILE: one problem per line as `gemmtune compile` flags (default: the varied set below).
#   TOPK (env, default 16): candidates compiled per backend and problem (0 = the whole lists).
#   K (env, default 8): the tuner's top k; the new list's first K candidates without spills must be the old top K (or,
#   where the old top K holds configs that spill, the old list's first K without spills).
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
old, new = lst("old"), lst("new")
sp_old, sp_new = spills("old"), spills("new")
def first_clean(cands, sp, k):
    """The first k candidates that compile without spills (None: a candidate before them was not compiled)."""
    out = []
    for c in cands:
        if len(out) == k:
            break
        if c not in sp:
            return None
        if sp[c] == 0:
            out.append(c)
    return out
verdicts = []
for be in ("sm90", "gemv"):
    o_all = [c for c in old if c.startswith(be + ":")]
    n_all = [c for c in new if c.startswith(be + ":")]
    if not o_all and not n_all:
        continue
    o = o_all[:k]
    o_clean, n_clean = first_clean(o_all, sp_old, k), first_clean(n_all, sp_new, k)
    prefix = n_all[: len(o_all)] == o_all
    spilling_in_old_top = [c for c in o if sp_old.get(c)]
    head = f"{be}: {len(o_all)} -> {len(n_all)} listed, old list {'a prefix of' if prefix else 'NOT a prefix of'} the new"
    if n_clean is None or o_clean is None:
        verdicts.append(head + "; undecided (raise TOPK)")
    elif n_clean == o:
        verdicts.append(head + f"; top {len(o)} equal")
    elif n_clean == o_clean:
        verdicts.append(head + f"; first {k} without spills equal ({len(spilling_in_old_top)} of the old top {k} "
                        "spill in both builds)")
    else:
        verdicts.append(head + f"; DIFFERENT first {k} without spills: old {o_clean} new {n_clean}")
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
