#!/usr/bin/env bash
# Times a fixed family of sm90 configs (plus cuBLASLt's default) side by side, interleaved, per shape: the A/B data
# behind the ranking model (bench/NOTES.md). Configs are taken from `gemmtune list` so each carries the problem's
# raster band.
#   scripts/sm90_dev/side_by_side.sh OUTDIR BUILD_DIR   (env: SHAPES "m,n,k ...", PATTERNS, TIMEOUT; EXTRA: more
#   configs timed as they are, e.g. cuBLASLt algorithm strings; LIST_BUILD: the build whose `list` resolves the
#   patterns, so that two builds time the same configs when only one of them enumerates some)
# Timing and output: scripts/sm90_dev/ab_configs.sh (files ab_MxNxK.txt/.log).
set -u
OUT=$1; B=$2; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PATTERNS=${PATTERNS:-"128x256x64,.*cluster=1x1,sched=coop 128x256x64,.*cluster=2x1,sched=coop 128x256x64,.*cluster=1x2,sched=coop 128x256x64,.*cluster=2x2,sched=coop 256x128x64,.*cluster=2x1,sched=coop 128x192x64,.*cluster=1x1,sched=pingpong 128x192x64,.*cluster=2x1,sched=pingpong 128x176x64,.*cluster=1x1,sched=pingpong 128x176x64,.*cluster=2x1,sched=pingpong 128x160x64,.*cluster=2x1,sched=pingpong 128x224x64,.*cluster=1x1,sched=coop 256x160x64,.*cluster=1x1,sched=coop 256x192x64,.*cluster=1x1,sched=coop"}
for s in ${SHAPES:-4096,4096,4096}; do
  IFS=, read -r m n k <<<"$s"
  list=$(LD_LIBRARY_PATH="${LIST_BUILD:-$B}" "${LIST_BUILD:-$B}/gemmtune" list --m "$m" --n "$n" --k "$k" --backends sm90 2>/dev/null)
  # shellcheck disable=SC2206
  cfgs=(cublaslt:default ${EXTRA:-})
  for pat in $PATTERNS; do
    c=$(grep -E "tile=$pat" <<<"$list" | head -1)
    [[ -n "$c" ]] && cfgs+=("$c")
  done
  "$(dirname "$0")/ab_configs.sh" "$OUT" "$B" "$s" "${cfgs[@]}"
done
