#!/usr/bin/env bash
# Runs a benchmark main class with the bundle's runtime, class path and JVM flags:
#   run-bench.sh MAIN_CLASS [ARGS...]
# With no arguments it runs the device diagnostic, whose bandwidth figures are the ceilings the
# benchmarks are compared with.
set -uo pipefail
source "$(dirname "$0")/env.sh"
if [ $# -eq 0 ]; then
  set -- dev.tessera.gpu.diagnose.Diagnose
fi
exec "$java" "${jvm_flags[@]}" -Xmx16g -cp "$classpath" "$@"
