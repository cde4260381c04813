#!/usr/bin/env bash
# Installs what the notebooks need, without root, into a project-local folder:
#   - Jupyter (nbconvert, nbclient) from Debian's packages: `apt-get download` of the packages
#     and of their dependencies that this machine lacks, unpacked with `dpkg -x`;
#   - with --with-notebook, also Debian's classic `jupyter notebook` server, to open them.
# It is idempotent: a second run that finds everything in place returns at once.
# Debian's own Python (/usr/bin/python3) runs it all; a pyenv python3 on PATH is not used.
#
#   notebooks/bin/install-jupyter.sh [--with-notebook]
#
# The folder is $NOTEBOOKS_TOOLS_DIR, by default notebooks/target/jupyter.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="${NOTEBOOKS_TOOLS_DIR:-$here/../target/jupyter}"
mkdir -p "$tools"
tools="$(cd "$tools" && pwd)"
root="$tools/root"

packages=(jupyter-nbconvert python3-nbclient)
check_modules="nbconvert, nbclient, nbformat, jupyter_client, zmq"
if [[ "${1:-}" == "--with-notebook" ]]; then
  packages+=(jupyter-notebook)
  check_modules+=", notebook"
fi
# Alternatives of debconf and friends that apt-cache's recursion drags in; never needed here.
skip_re='^(cdebconf|cdebconf-.*|libdebian-installer4|libnewt0\.52|libtextwrap1|install-info)$'

fail() {
  echo "install-jupyter: $*" >&2
  echo "install-jupyter: the notebooks need Debian's python3 and its packages ${packages[*]};" \
    "install them (apt-get install ${packages[*]}) or give the build network access to Debian's" \
    "mirrors, or skip the notebook tests with -Dnotebooks.skip=true." >&2
  exit 1
}

[[ -x /usr/bin/python3 ]] || fail "/usr/bin/python3 (Debian's python3) is missing."

env_file="$tools/env.sh"
cat > "$env_file" <<ENV
# Source this to use the project-local Jupyter (written by install-jupyter.sh).
export PYTHONPATH="$root/usr/lib/python3/dist-packages\${PYTHONPATH:+:\$PYTHONPATH}"
export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu:$root/usr/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PATH="$root/usr/bin:\$PATH"
export JUPYTER_PATH="$tools/share/jupyter"
export JUPYTER_DATA_DIR="$tools/share/jupyter"
export JUPYTER_CONFIG_DIR="$tools/etc/jupyter"
export JUPYTER_RUNTIME_DIR="$tools/runtime"
export JUPYTER_PLATFORM_DIRS=1
export PYDEVD_DISABLE_FILE_VALIDATION=1
ENV

# shellcheck disable=SC1090
if (source "$env_file" && /usr/bin/python3 -c "import $check_modules" 2>/dev/null); then
  exit 0
fi

command -v apt-get >/dev/null && command -v dpkg >/dev/null \
  || fail "apt-get and dpkg are missing (this needs a Debian 12 machine)."

# Package lists: the machine's own when they know the packages, else a private copy.
apt_opts=()
if [[ -z "$(apt-cache policy jupyter-nbconvert 2>/dev/null | sed -n 's/ *Candidate: *//p' | grep -v none)" ]]; then
  echo "install-jupyter: the machine's package lists lack Jupyter; fetching private lists" >&2
  mkdir -p "$tools/apt/lists/partial" "$tools/apt/cache/archives/partial"
  apt_opts=(-o "Dir::State::Lists=$tools/apt/lists" -o "Dir::Cache=$tools/apt/cache"
            -o Debug::NoLocking=1)
  apt-get "${apt_opts[@]}" -qq update || fail "apt-get update failed (no network to Debian's mirrors?)."
fi

closure=$(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests \
    --no-conflicts --no-breaks --no-replaces --no-enhances "${packages[@]}" 2>/dev/null \
  | grep -E '^[a-z0-9]' | sort -u) || fail "apt-cache cannot resolve ${packages[*]}."
missing=()
for p in $closure; do
  [[ "$p" =~ $skip_re ]] && continue
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == *"ok installed"* ]] || missing+=("$p")
done

mkdir -p "$tools/debs" "$root"
echo "install-jupyter: downloading ${#missing[@]} Debian packages into $tools/debs" >&2
(cd "$tools/debs" && apt-get "${apt_opts[@]}" -qq download "${missing[@]}" 2>&1 \
  | grep -v 'unsandboxed as root' >&2) || true
for p in "${missing[@]}"; do
  compgen -G "$tools/debs/${p}_*.deb" >/dev/null || fail "apt-get download $p failed."
done
for deb in "$tools"/debs/*.deb; do
  dpkg -x "$deb" "$root"
done

(source "$env_file" && /usr/bin/python3 -c "import $check_modules") \
  || fail "the unpacked packages do not import ($check_modules)."
echo "install-jupyter: Jupyter is in $root (source $env_file to use it;" \
  "notebooks/bin/jupyter.sh opens the notebooks)" >&2
