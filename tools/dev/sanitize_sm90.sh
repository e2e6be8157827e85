#!/usr/bin/env bash
# compute-sanitizer memcheck + racecheck on sm90 configs, each on a ragged problem with several tiles per CTA
# (persistent loop, ring wrap-around), in-process so the kernel runs under the tool.
#   tools/dev/sanitize_sm90.sh LOGFILE GEMMTUNE_BIN TIMEOUT_S CONFIG...   (configs without the "sm90:" prefix)
#   SAN_SHAPE="M N K" overrides the problem (default "1000 1096 520"; a tail=sk config needs a partial last round of
#   cluster tiles to run its stream-K path, e.g. "1536 1536 520").
# Prints one line per run: "<tool> <config>: rc=<rc> <summary>"; exits 1 when any run failed.
set -u
LOG=$1; GT=$2; TO=$3; shift 3
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
read -r SM SN SK <<<"${SAN_SHAPE:-1000 1096 520}"
bad=0
for cfg in "$@"; do
  for tool in memcheck racecheck; do
    timeout "$TO" "$SAN" --tool "$tool" --error-exitcode 9 "$GT" tune --config "sm90:$cfg" --m "$SM" --n "$SN" \
      --k "$SK" --in-process --no-cache --min-iters 1 --min-time-ms 0 --warmup 1 --settle-ms 0 >"$LOG.tmp" 2>&1
    rc=$?
    cat "$LOG.tmp" >>"$LOG"
    echo "$tool $cfg: rc=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$LOG.tmp" | tail -1)"
    [[ $rc != 0 ]] && bad=1
  done
done
rm -f "$LOG.tmp"
exit $bad
