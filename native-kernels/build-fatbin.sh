#!/usr/bin/env bash
# Builds every kernels/*.cu into one fatbin, and prelude/prelude.cu into relocatable PTX beside it
# (prelude.ptx: what the generated kernels call; see that file). Called by Maven
# (generate-resources):
#   build-fatbin.sh OUTPUT.fatbin "GENCODE FLAGS" STAMP_FILE
# Rebuilds only when a source or the target list changed, so everyday builds stay fast.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
gencode=$2

nvcc_bin=""
if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  nvcc_bin="$CUDA_HOME/bin/nvcc"
elif command -v nvcc >/dev/null 2>&1; then
  nvcc_bin=$(command -v nvcc)
elif [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc_bin=/usr/local/cuda/bin/nvcc
fi
if [ -z "$nvcc_bin" ]; then
  cat >&2 <<MSG
[tessera] nvcc, the CUDA compiler, was not found, so the kernels cannot be built.
[tessera] Install a CUDA toolkit (12.x or 13.x) and either set CUDA_HOME to its folder
[tessera] (e.g. export CUDA_HOME=/usr/local/cuda) or put its bin/ on PATH, then build again.
MSG
  exit 1
fi

stamp=$3
mkdir -p "$(dirname "$out")"
# What the fatbin depends on: the sources, the headers, the targets and the compiler version.
fingerprint=$( { "$nvcc_bin" --version | tail -1; echo "$gencode";
                 cat "$here"/include/tessera/*.cuh "$here"/kernels/*.cu "$here"/prelude/*.cu; } \
               | sha256sum | cut -d' ' -f1)
prelude="$(dirname "$out")/prelude.ptx"
if [ -f "$out" ] && [ -f "$prelude" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$fingerprint" ]; then
  echo "[tessera] $out is up to date"
  exit 0
fi

# One translation unit (kernels/all.cu includes every kernel file) gives one fatbin
# with one module for the Java side to load.
echo "[tessera] $nvcc_bin --fatbin $gencode"
# shellcheck disable=SC2086
"$nvcc_bin" --fatbin -std=c++17 -O3 --extended-lambda -Xptxas=-warn-spills \
  -I "$here/include" $gencode -o "$out.tmp" "$here/kernels/all.cu"
mv "$out.tmp" "$out"
# The prelude: PTX for the oldest supported architecture (compute_75), which the in-process PTX
# compiler turns into code for the device at hand together with each generated kernel. nvcc
# writes its own PTX ISA version; the Java side (PtxPrelude) declares one the compiler accepts.
"$nvcc_bin" -ptx -rdc=true -std=c++17 -O3 -arch=compute_75 -I "$here/include" \
  -o "$prelude.tmp" "$here/prelude/prelude.cu"
mv "$prelude.tmp" "$prelude"
echo "$fingerprint" > "$stamp"
echo "[tessera] built $out ($(stat -c %s "$out") bytes)"
