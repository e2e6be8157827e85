#!/usr/bin/env bash
# Side-by-side (interleaved) timing of an explicit config list on several shapes.
#   scripts/sm90_dev/ab_configs.sh OUTDIR BUILD_DIR "m,n,k ..." CONFIG...   (configs without the "sm90:" prefix;
#   "cublaslt:..." entries are passed as they are)
set -u
OUT=$1; B=$2; SH=$3; shift 3; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-/tmp/gtcache}
args=()
for c in "$@"; do
  if [[ $c == sm90:* || $c == cublaslt:* ]]; then args+=(--config "$c"); else args+=(--config "sm90:$c"); fi
done
for s in $SH; do
  IFS=, read -r m n k <<<"$s"
  timeout "${TIMEOUT:-150}" "$B/gemmtune" tune --m "$m" --n "$n" --k "$k" "${args[@]}" --no-cache \
    >"$OUT/ab_${m}x${n}x${k}.txt" 2>"$OUT/ab_${m}x${n}x${k}.log"
  echo "== $s rc=$?"
  grep -A100 "side by side" "$OUT/ab_${m}x${n}x${k}.log" | sed 's/^ *//' | sort -t' ' -k2 -n -s | awk '{printf "%-76s %s\n", $1, $2}' | sort -k2 -n
done
