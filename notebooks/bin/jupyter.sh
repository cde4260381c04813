#!/usr/bin/env bash
# Opens the notebooks: installs Jupyter with Debian's classic notebook server into
# notebooks/target/jupyter (no root needed), registers the "Tessera (Java)" kernel, and runs
#   jupyter ARGS...            (default: jupyter notebook, in notebooks/)
# e.g. notebooks/bin/jupyter.sh notebook --no-browser --port 8888
# Build the jars first: ./mvnw -B package -DskipTests -pl notebooks -am
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="${NOTEBOOKS_TOOLS_DIR:-$here/../target/jupyter}"
"$here/install-jupyter.sh" --with-notebook
tools="$(cd "$tools" && pwd)"
# shellcheck disable=SC1091
source "$tools/env.sh"
# shellcheck source=kernelspec.sh
source "$here/kernelspec.sh"
export TESSERA_NOTEBOOK_DATA="${TESSERA_NOTEBOOK_DATA:-$target/ssb-data}"
cd "$nb_dir"
if [[ $# -eq 0 ]]; then set -- notebook; fi
exec /usr/bin/python3 -m jupyter "$@"
