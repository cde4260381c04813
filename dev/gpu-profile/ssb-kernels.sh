#!/usr/bin/env bash
# SSB's generated kernels on the GPU, query by query: Nsight Compute's time of every launch of
# every tessera_gen kernel over one cached run of the queries (ncu serializes the kernels, and by
# default flushes the caches and locks the clocks before each: NCU_FLAGS="--cache-control none
# --clock-control none" measures them as a run leaves them). Run on the device machine after
# dev/gpu-unpack, from the checkout:
#
#   dev/gpu-profile/ssb-kernels.sh [SETTING ...]
#
# Each SETTING is a JAVA_TOOL_OPTIONS value (say -Dtessera.exp.x=1 of a temporary build), "-" for
# none (the default); the queries run once per variant and setting, ROUNDS times over (default
# 1). VARIANTS names jars of gpu-operators' classes that dev/gpu-variants built, each put first on
# the class path for its runs ("-" for the bundle's own classes, the default), so that builds are
# compared in one call over data generated once. The data is generated before any timing (ncu
# during the generation has crashed the JVM).
# Environment: SCALE (1), QUERIES (1.1,2.1,3.1,4.1), ROUNDS, VARIANTS, NCU_FLAGS,
# TESSERA_SSB_HEAP (16g; 48g at SCALE 10). Prints one line per kernel, variant and setting
# (ncu_tables.py times), and per variant and setting the queries' results against Spark's CPU.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
app=/opt/tessera/app
scale=${SCALE:-1}
queries=${QUERIES:-1.1,2.1,3.1,4.1}
work=${TMPDIR:-/tmp}/ssb-kernels
mkdir -p "$work"
export TESSERA_SSB_HEAP=${TESSERA_SSB_HEAP:-16g}
ssb=("$app/run-ssb.sh" --scale "$scale" --input cached --runs 1
  --conf spark.sql.autoBroadcastJoinThreshold=64m)
[ $# -gt 0 ] || set -- -
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"${ssb[@]}" --queries 1.1 --out "$work/generate" > "$work/generate.log" 2>&1 \
  || { echo "generating the data failed: $work/generate.log" >&2; tail -20 "$work/generate.log" >&2; exit 1; }
for variant in ${VARIANTS:--}; do
  [ "$variant" = - ] || [ -f "$variant" ] \
    || { echo "no variant jar $variant (dev/gpu-variants builds them)" >&2; exit 2; }
done
for round in $(seq "${ROUNDS:-1}"); do
  for variant in ${VARIANTS:--}; do
    classes=${TESSERA_CLASSES:-}
    label=""
    if [ "$variant" != - ]; then
      classes=$(realpath "$variant")
      label="$(basename "$variant" .jar), "
    fi
    for setting in "$@"; do
      options=$([ "$setting" = - ] || echo "$setting")
      TESSERA_CLASSES="$classes" JAVA_TOOL_OPTIONS="$options" ncu ${NCU_FLAGS:-} \
        --target-processes all --csv \
        --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread \
        -k regex:tessera_gen "${ssb[@]}" --queries "$queries" --out "$work/run" \
        > "$work/times.csv" 2> "$work/times.log"
      python3 "$here/ncu_tables.py" times "$work/times.csv" "[$label$setting round $round]"
      # Whether each query's result under ncu was Spark's: a kernel change can be wrong too.
      echo "[$label$setting round $round] results: $(python3 -c 'import csv, sys
print(" ".join(r["query"] + " " + r["result"] for r in csv.DictReader(open(sys.argv[1]))))' \
        "$work/run/ssb.csv" 2>&1)"
    done
  done
done
