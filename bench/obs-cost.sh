#!/bin/sh
# Instructions per call of each observability variant (bench/obs-cost.mjs under cachegrind, no
# cache simulation): "I refs" at two call counts, difference ÷ difference of calls, so start-up and
# warm-up cancel out. Slow (valgrind runs node ~50× slower): a few minutes per variant.
# Usage: bench/obs-cost.sh [low=50] [high=250] [variant[:distDir] ...]   (default: off default on)
set -e
cd "$(dirname "$0")/.."
LOW=${1:-50}; HIGH=${2:-250}; shift 2 2>/dev/null || true
NODE=${NODE:-node_modules/.bin/node}
export OBS_WARMUP=${OBS_WARMUP:-200}
refs () { valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$NODE" bench/obs-cost.mjs "$1" "$2" $3 2>&1 | sed -n 's/.*I *refs: *//p' | tr -d ,; }
for spec in ${@:-off default on}; do
  v=${spec%%:*}; d=$( [ "$spec" != "$v" ] && echo "${spec#*:}" || true )
  lo=$(refs "$v" "$LOW" "$d"); hi=$(refs "$v" "$HIGH" "$d")
  echo "$v${d:+ ($d)}: $(( (hi - lo) / (HIGH - LOW) )) instructions/call (I refs $lo at $LOW calls, $hi at $HIGH)"
done
