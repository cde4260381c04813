#!/usr/bin/env bash
# Where one launch of a benchmark's generated kernel spends its time: Nsight Compute's throughput,
# occupancy, scheduler and warp-state sections and its source counters (stall samples and executed
# instructions per SASS instruction), for one launch after the benchmark's warm-up. Run on the
# device machine after dev/gpu-unpack, from the checkout:
#
#   dev/gpu-profile/bench-launch-profile.sh MAIN_CLASS [ARGS...]
#   e.g. dev/gpu-profile/bench-launch-profile.sh dev.tessera.gpu.bench.FilterProjectBench \
#          67108864 4268 cuda codegen
#        KERNEL=regex:tessera_gen_aggregate SKIP=2001 dev/gpu-profile/bench-launch-profile.sh \
#          dev.tessera.gpu.bench.HashAggregateBench 33554432 4268 cuda codegen "long keys" 1000
#        (the second of 1,000 groups' launches; with one group count the run ends after it)
#
# Environment: KERNEL (ncu's kernel filter, default regex:tessera_gen), SKIP (launches of it to
# skip first, default 4), JAVA_TOOL_OPTIONS (say -Dtessera.exp.x=1 of a temporary build). Writes
# the details and the SASS table to $OUT (or $TMPDIR/bench-profile) as bench-details.csv and
# bench-sass.csv, prints the summary, the hot spots (ncu_tables.py hotspots) and the length of the
# path most items take (ncu_tables.py path).
set -uo pipefail
[ $# -ge 1 ] || { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
app=/opt/tessera/app
work=${TMPDIR:-/tmp}/bench-profile
out=${OUT:-$work}
mkdir -p "$work" "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ncu --import-source no --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section SourceCounters --section Occupancy --section LaunchStats \
  --section SchedulerStats -k "${KERNEL:-regex:tessera_gen}" --launch-skip "${SKIP:-4}" \
  --launch-count 1 -o "$work/launch" -f "$app/run-bench.sh" "$@" > "$work/profile.log" 2>&1 \
  || { echo "ncu failed: $work/profile.log" >&2; tail -20 "$work/profile.log" >&2; exit 1; }
ncu -i "$work/launch.ncu-rep" --page details --csv > "$out/bench-details.csv" 2>/dev/null
ncu -i "$work/launch.ncu-rep" --page source --csv --print-source sass > "$out/bench-sass.csv" 2>/dev/null
grep -E '"(Duration|Registers Per Thread|Grid Size|Theoretical Occupancy|Achieved Occupancy|DRAM Throughput|Memory Throughput|L2 Hit Rate|Warp Cycles Per Issued Instruction|Eligible Warps Per Scheduler)"' \
  "$out/bench-details.csv" | awk -F'","' '{print "  " $13 ": " $15 " " $14}' | tr -d '"'
python3 "$here/ncu_tables.py" hotspots "$out/bench-sass.csv" | head -60
# The length of the path most items take (ncu_tables.py path lists it).
python3 "$here/ncu_tables.py" path "$out/bench-sass.csv" 80 | head -1
