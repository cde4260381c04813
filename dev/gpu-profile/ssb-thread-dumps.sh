#!/usr/bin/env bash
# Where the Tessera side's task threads spend an SSB query's measured runs, sampled: a Java
# thread dump (SIGQUIT) every INTERVAL seconds once the Tessera warm-up is over, then the task
# threads running Tessera's code counted by state and top frames (thread_dumps.py). The bundle's
# runtime has no JFR, and a thread dump needs nothing but the JVM. Run on the device machine
# after dev/gpu-unpack, from the checkout:
#
#   dev/gpu-profile/ssb-thread-dumps.sh [OUT_DIR]
#
# Environment: SCALE (10), QUERIES (4.1), INPUT (parquet), RUNS (3), INTERVAL (0.1), FRAMES (6),
# TESSERA_SSB_HEAP (48g), TIMEOUT (seconds, 150). The dumps go to the run's log (OUT_DIR/ssb.log),
# the summary to OUT_DIR/dumps.txt and standard output.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
app=/opt/tessera/app
out=${1:-${OUT:-/tmp}/ssb-thread-dumps}
mkdir -p "$out"
export TESSERA_SSB_HEAP=${TESSERA_SSB_HEAP:-48g}
"$app/run-ssb.sh" --scale "${SCALE:-10}" --data "${TMPDIR:-/tmp}/ssb-data-${SCALE:-10}" \
  --input "${INPUT:-parquet}" --runs "${RUNS:-3}" --queries "${QUERIES:-4.1}" \
  --conf spark.sql.autoBroadcastJoinThreshold=64m --out "$out/report" > "$out/ssb.log" 2>&1 &
runner=$!
# run-ssb.sh execs the JVM, so its pid is the JVM's.
end=$((SECONDS + ${TIMEOUT:-150}))
while kill -0 "$runner" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do
  if grep -q "warm-up, Tessera" "$out/ssb.log"; then
    kill -QUIT "$runner" 2>/dev/null
  fi
  sleep "${INTERVAL:-0.1}"
done
kill "$runner" 2>/dev/null
wait "$runner" 2>/dev/null
grep -E "^\[ssb\] query|^[0-9]\.[0-9] " "$out/ssb.log" | head -20
python3 "$here/thread_dumps.py" "$out/ssb.log" "${FRAMES:-6}" | tee "$out/dumps.txt" | head -60
