#!/usr/bin/env bash
# Checks that a change to the ranking code (cost models, enumeration order, priors) left the candidate lists alone:
# `gemmtune list --top-k 0` of the JIT backends, old binary against new, byte for byte, over a wide problem set.
#
# Usage: tools/dev/compare_lists.sh OLD_GEMMTUNE NEW_GEMMTUNE [PROBLEMS_FILE]
#   PROBLEMS_FILE: one problem per line as `gemmtune list` flags (default: the set below: decode 1-64 tokens in both
#   orientations, Llama shapes, squares, odd sizes, every layout, f16, f32 D, beta, epilogues, batches).
#   BACKENDS (env, default sm90,gemv), SMS (env, default 132: --arch-sms), OUT (env, default a temp dir).
# Exit status 0 when every list is identical, 1 otherwise. No GPU needed.
set -euo pipefail
old=$1 new=$2 problems=${3:-}
BACKENDS=${BACKENDS:-sm90,gemv} SMS=${SMS:-132}
OUT=${OUT:-$(mktemp -d /tmp/compare_lists.XXXXXX)}
mkdir -p "$OUT"

default_problems() {
  # Decode: few tokens on M (row-major D) and on N (B col-major, col-major D), against Llama weights.
  for t in 1 2 3 4 5 8 12 16 24 32 48 64; do
    echo "--m $t --n 4096 --k 4096"
    echo "--m $t --n 14336 --k 4096 --epilogue silu_glu"
    echo "--n $t --m 4096 --k 14336 --B bf16:col --D bf16:col"
  done
  for t in 1 4 8 16; do
    echo "--m $t --n 28672 --k 4096"
    echo "--m $t --n 128256 --k 4096"
    echo "--m $t --n 6144 --k 4096 --beta 1"
    echo "--m $t --n 4096 --k 4096 --D f32:row"
    echo "--m $t --n 4096 --k 4096 --A f16:row --B f16:col --D f16:row"
    echo "--m $t --n 4096 --k 4096 --batch 4"
    echo "--m $t --n 4096 --k 4096 --epilogue bias,gelu_tanh"
    echo "--n $t --m 4096 --k 4096 --B bf16:row --D bf16:col"
    echo "--n $t --m 4096 --k 4096 --A bf16:col --B bf16:col --D bf16:col"
  done
  cat <<'P'
--m 4096 --n 4096 --k 4096
--m 8192 --n 8192 --k 8192
--m 2048 --n 2048 --k 2048
--m 1024 --n 1024 --k 1024
--m 512 --n 512 --k 512
--m 6000 --n 6000 --k 1000
--m 8192 --n 28672 --k 4096
--m 8192 --n 4096 --k 14336
--m 8192 --n 6144 --k 4096
--m 8192 --n 6144 --k 512
--m 4096 --n 8192 --k 512
--m 2048 --n 4096 --k 14336
--m 128 --n 4096 --k 4096
--m 128 --n 14336 --k 4096 --epilogue swiglu:interleave64
--m 4096 --n 4096 --k 4096 --D bf16:col
--m 4096 --n 4096 --k 4096 --B bf16:row
--m 4096 --n 4096 --k 4096 --A bf16:col
--m 4096 --n 4096 --k 4096 --A bf16:col --B bf16:row --D bf16:col
--m 4096 --n 4096 --k 4096 --A f16:row --B f16:col --D f16:row
--m 4096 --n 4096 --k 4096 --D f32:row
--m 4096 --n 4096 --k 4096 --beta 1
--m 4096 --n 4096 --k 4096 --beta 1 --C f32:row --D f32:row
--m 4096 --n 4096 --k 4096 --epilogue bias,gelu_tanh
--m 4096 --n 8192 --k 4096 --epilogue silu_glu
--m 4096 --n 8192 --k 4096 --epilogue swiglu:interleave64
--m 4096 --n 4096 --k 4096 --epilogue bias,residual
--m 4096 --n 4096 --k 4096 --ldb 4104 --lda 4104
--m 4096 --n 4096 --k 1000 --lda 1000 --ldb 1000
--m 4096 --n 4095 --k 4096 --ldb 4096 --ldd 4096
--m 4097 --n 3000 --k 1000
--m 1000 --n 1000 --k 1000
--m 777 --n 1234 --k 4104
--m 1024 --n 1024 --k 1024 --batch 4
--m 512 --n 4096 --k 4096 --batch 8 --epilogue bias,gelu_tanh
--m 24 --n 4096 --k 4096 --batch 3 --epilogue bias,residual
P
}
if [ -n "$problems" ]; then grep -v '^\s*\(#\|$\)' "$problems"; else default_problems; fi >"$OUT/problems.txt"

report="$OUT/report.txt"
: >"$report"
i=0 same=0 differ=0
while read -r prob; do
  i=$((i + 1))
  # shellcheck disable=SC2086  # a problem line is a list of flags
  "$old" list $prob --backends "$BACKENDS" --arch-sms "$SMS" --top-k 0 >"$OUT/old.$i" 2>&1 || true
  # shellcheck disable=SC2086
  "$new" list $prob --backends "$BACKENDS" --arch-sms "$SMS" --top-k 0 >"$OUT/new.$i" 2>&1 || true
  n=$(grep -c . "$OUT/old.$i" || true)
  if cmp -s "$OUT/old.$i" "$OUT/new.$i"; then
    same=$((same + 1))
    echo "[$i] same ($n lines): $prob" >>"$report"
  else
    differ=$((differ + 1))
    { echo "[$i] DIFFERENT: $prob"; diff "$OUT/old.$i" "$OUT/new.$i" | head -20 || true; } >>"$report"
  fi
done <"$OUT/problems.txt"
echo "lists: $same identical, $differ different, of $i problems" >>"$report"
cat "$report"
echo "(files in $OUT)"
[ "$differ" -eq 0 ]
