#!/usr/bin/env bash
# Times a fixed family of sm90 configs (plus cuBLASLt's default) side by side, interleaved, per shape: the A/B data
# behind the ranking model (bench/NOTES.md). Configs are taken from `gemmtune list` so each carries the problem's
# raster band.
#   scripts/sm90_dev/side_by_side.sh OUTDIR BUILD_DIR   (env: SHAPES "m,n,k ...", PATTERNS, TIMEOUT)
set -u
OUT=$1; B=$2; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-/tmp/gtcache}
PATTERNS=${PATTERNS:-"128x256x64,.*cluster=1x1,sched=coop 128x256x64,.*cluster=2x1,sched=coop 128x256x64,.*cluster=1x2,sched=coop 128x256x64,.*cluster=2x2,sched=coop 256x128x64,.*cluster=2x1,sched=coop 128x192x64,.*cluster=1x1,sched=pingpong 128x192x64,.*cluster=2x1,sched=pingpong 128x176x64,.*cluster=1x1,sched=pingpong 128x176x64,.*cluster=2x1,sched=pingpong 128x160x64,.*cluster=2x1,sched=pingpong 128x224x64,.*cluster=1x1,sched=coop 256x160x64,.*cluster=1x1,sched=coop 256x192x64,.*cluster=1x1,sched=coop"}
for s in ${SHAPES:-4096,4096,4096}; do
  IFS=, read -r m n k <<<"$s"
  args=(--config cublaslt:default)
  list=$("$B/gemmtune" list --m "$m" --n "$n" --k "$k" --backends sm90 2>/dev/null)
  for pat in $PATTERNS; do
    c=$(grep -E "tile=$pat" <<<"$list" | head -1)
    [[ -n "$c" ]] && args+=(--config "$c")
  done
  timeout "${TIMEOUT:-120}" "$B/gemmtune" tune --m "$m" --n "$n" --k "$k" "${args[@]}" --no-cache \
    >"$OUT/sbs_${m}x${n}x${k}.txt" 2>"$OUT/sbs_${m}x${n}x${k}.log"
  echo "== $s rc=$?"
  sed -n '4,$p' "$OUT/sbs_${m}x${n}x${k}.txt" | awk '{ if ($1 == "*") { $1 = ""; } print }' | awk '{printf "%-74s %s\n", $2, $(NF-4)}'
done
