#!/usr/bin/env bash
# The device report: driver, device, kernels smoke check, bandwidths.  run-diagnose.sh [--device N]
set -uo pipefail
source "$(dirname "$0")/env.sh"
exec "$java" "${jvm_flags[@]}" -cp "$classpath" dev.tessera.gpu.diagnose.Diagnose "$@"
