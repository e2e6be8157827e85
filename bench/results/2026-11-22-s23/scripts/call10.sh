#!/usr/bin/env bash
# Session 23 device call 10 (the landed enumeration: csplit twins after the family heads): default tunes with the
# first 12 of each backend at the two shapes with few row groups, twice each (fresh caches); where the twins rank.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
for rep in 1 2; do
  for pr in "16 4096 14336" "8 4096 14336"; do
    set -- $pr
    L=$O/tune12_$1x$2x$3_$rep.log
    GEMMTUNE_CACHE_DIR=/tmp/gtc_$rep timeout 90 build-lead/gemmtune tune --m $1 --n $2 --k $3 --top-k 12 --no-cache < /dev/null > $L.out 2> $L
    echo "== $1x$2x$3 rep $rep: $(grep -E 'winner' $L.out | head -1)"
    grep -A7 "runoff" $L | cut -c1-110
  done
done
tar czf $O/logs.tgz -C $O $(cd $O && ls tune12_*) && rm -f $O/tune12_*
