#!/usr/bin/env bash
# A benchmark's generated kernels timed alone: Nsight Compute's gpu__time_duration of the
# launches after the benchmark's warm-up, printed as the median of each run of N launches (one
# line per setting). Stabler than the benchmarks' wall clock, which moves 10-20% between runs of
# the same code on these machines (ncu fixes the clocks). Run on the device machine after
# dev/gpu-unpack, from the checkout:
#
#   dev/gpu-profile/bench-kernel-times.sh MAIN_CLASS [ARGS...]
#   e.g. KERNEL=regex:tessera_gen_aggregate SKIP=2000 COUNT=36 N=6 \
#          dev/gpu-profile/bench-kernel-times.sh dev.tessera.gpu.bench.HashAggregateBench \
#          33554432 4268 cuda codegen "long keys"
#        (HashAggregateBench: 2,000 warm-up launches, then 6 a group count: 1, 10, ... 10^5)
#
# Environment: KERNEL (ncu's kernel filter, default regex:tessera_gen), SKIP (launches of it to
# skip first, default 0), COUNT (launches to time, default 6), N (launches a median, default
# COUNT), SETTINGS (JAVA_TOOL_OPTIONS values, say -Dtessera.exp.x=1 of a temporary build, one run
# each; "-" for none, the default), VARIANTS (jars of gpu-operators' classes that dev/gpu-variants
# built, each put first on the class path for one run of every setting, so that several builds
# are compared in one call on one card; "-" for the bundle's own classes, the default; a variant
# may be several jars joined by ':', say a build's classes and a shared jar of test classes).
set -uo pipefail
[ $# -ge 1 ] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
app=/opt/tessera/app
work=${TMPDIR:-/tmp}/bench-kernel-times
mkdir -p "$work"
count=${COUNT:-6}
for variant in ${VARIANTS:--}; do
  classes=""
  label=""
  if [ "$variant" != "-" ]; then
    IFS=: read -ra jars <<< "$variant"
    for jar in "${jars[@]}"; do
      [ -f "$jar" ] || { echo "no variant jar $jar (dev/gpu-variants builds them)" >&2; exit 2; }
      classes="${classes:+$classes:}$(realpath "$jar")"
    done
    label="$(basename "${jars[0]}" .jar), "
  fi
  for setting in ${SETTINGS:--}; do
    options=""
    [ "$setting" = "-" ] || options=$setting
    TESSERA_CLASSES="$classes" JAVA_TOOL_OPTIONS="$options" ncu --metrics gpu__time_duration.sum \
      -k "${KERNEL:-regex:tessera_gen}" --launch-skip "${SKIP:-0}" --launch-count "$count" --csv \
      "$app/run-bench.sh" "$@" > "$work/times.csv" 2> "$work/run.log" \
      || { echo "ncu failed: $work/run.log" >&2; tail -20 "$work/run.log" >&2; exit 1; }
    python3 "$here/ncu_tables.py" medians "$work/times.csv" "${N:-$count}" \
      "${label}setting '$options':"
  done
done
