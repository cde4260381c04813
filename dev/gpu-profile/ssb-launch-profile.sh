#!/usr/bin/env bash
# Where one launch of each SSB query's fused aggregate kernel spends its time: Nsight Compute's
# source counters (warp stall samples and executed instructions per SASS instruction), occupancy
# and throughput, for the 9th launch of the kernel, cached input. Run on the device machine
# after dev/gpu-unpack, from the checkout:
#
#   dev/gpu-profile/ssb-launch-profile.sh
#
# Environment as ssb-kernels.sh (SCALE, QUERIES, TESSERA_SSB_HEAP). A first run times every
# kernel (ssb-kernels.sh) to find the fused ones; KERNELS="name,..." (in sorted query order)
# skips it. Writes each launch's SASS table to $OUT/sass-qQUERY.csv (for ncu_tables.py hotspots
# later) and prints each launch's summary and hot spots.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
app=/opt/tessera/app
queries=${QUERIES:-1.1,2.1,3.1,4.1}
export QUERIES=$queries
work=${TMPDIR:-/tmp}/ssb-kernels
out=${OUT:-$work}
mkdir -p "$work" "$out"
export TESSERA_SSB_HEAP=${TESSERA_SSB_HEAP:-16g}
ssb=("$app/run-ssb.sh" --scale "${SCALE:-1}" --input cached --runs 1
  --conf spark.sql.autoBroadcastJoinThreshold=64m --out "$work/run")
if [ -z "${KERNELS:-}" ]; then
  "$here/ssb-kernels.sh" -
fi
sorted=$(echo "$queries" | tr , '\n' | sort)
for query in $sorted; do
  if [ -n "${KERNELS:-}" ]; then
    name=$(echo "$KERNELS" | tr , '\n' | sed -n "$(echo "$sorted" | grep -n "^$query$" | cut -d: -f1)p")
  else
    name=$(python3 "$here/ncu_tables.py" fused "$work/times.csv" "$query")
  fi
  echo "== q$query: $name"
  ncu --target-processes all --import-source no --section SourceCounters --section WarpStateStats \
    --section Occupancy --section LaunchStats --section SpeedOfLight \
    -k "regex:$name" --launch-skip 8 --launch-count 1 -o "$work/q$query" -f \
    "${ssb[@]}" --queries "$query" > "$work/profile-q$query.log" 2>&1
  ncu -i "$work/q$query.ncu-rep" --page details --csv 2>/dev/null \
    | grep -E '"(Duration|Registers Per Thread|Grid Size|Theoretical Occupancy|Achieved Occupancy|DRAM Throughput)"' \
    | awk -F'","' '{print "  " $13 ": " $15}' | tr -d '"'
  ncu -i "$work/q$query.ncu-rep" --page source --csv --print-source sass > "$out/sass-q$query.csv" 2>/dev/null
  python3 "$here/ncu_tables.py" hotspots "$out/sass-q$query.csv" | head -40
done
