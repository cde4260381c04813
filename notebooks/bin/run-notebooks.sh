#!/usr/bin/env bash
# Executes every notebooks/*.ipynb headlessly (the notebook test, run by Maven's integration-test
# phase of the notebooks module) and fails if a cell fails. Installs Jupyter first when missing
# (install-jupyter.sh) and registers the Java kernel. The executed copies go to
# notebooks/target/executed/; the committed notebooks are never modified.
#
#   notebooks/bin/run-notebooks.sh [NOTEBOOK.ipynb ...]
#
# Environment: NOTEBOOKS_CELL_TIMEOUT (seconds, default 300), SSB_SCALE (default 0.01),
# TESSERA_NOTEBOOK_DATA (where SSB data goes, default notebooks/target/ssb-data).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="${NOTEBOOKS_TOOLS_DIR:-$here/../target/jupyter}"
"$here/install-jupyter.sh"
tools="$(cd "$tools" && pwd)"
# shellcheck disable=SC1091
source "$tools/env.sh"
# shellcheck source=kernelspec.sh
source "$here/kernelspec.sh"

export TESSERA_NOTEBOOK_DATA="${TESSERA_NOTEBOOK_DATA:-$target/ssb-data}"
export SSB_SCALE="${SSB_SCALE:-0.01}"
out="$target/executed"
mkdir -p "$out"
if [[ $# -gt 0 ]]; then notebooks=("$@"); else notebooks=("$nb_dir"/*.ipynb); fi

failed=()
for nb in "${notebooks[@]}"; do
  name="$(basename "$nb")"
  start=$SECONDS
  echo "notebooks: executing $name" >&2
  # execute.py restarts a kernel that does not answer at start-up (see its comment).
  if /usr/bin/python3 "$here/execute.py" "$nb" "$out/$name" tessera-java \
      "${NOTEBOOKS_CELL_TIMEOUT:-300}" >"$out/$name.log" 2>&1; then
    status=passed
  else
    status=failed
  fi
  grep "execute.py: kernel start" "$out/$name.log" >&2 || true
  if [[ $status == passed ]]; then
    echo "notebooks: $name passed in $((SECONDS - start)) s -> $out/$name" >&2
  else
    echo "notebooks: $name FAILED after $((SECONDS - start)) s; the log ($out/$name.log) ends:" >&2
    tail -n 40 "$out/$name.log" >&2
    failed+=("$name")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "notebooks: ${#failed[@]} notebook(s) failed: ${failed[*]}" >&2
  exit 1
fi
