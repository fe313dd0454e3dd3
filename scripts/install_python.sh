#!/usr/bin/env bash
# Install Python requirements into a virtualenv: `scripts/install_python.sh VENV REQUIREMENT...`.
#
# With uv when it can be had: it fetches and unpacks in parallel (the test dependencies: ~8 s from uv's cache). uv
# itself comes from PyPI through the base interpreter's pip, so the virtualenv needs no pip of its own (`make`
# creates it without: ensurepip costs ~7 s); without a base pip, pip is put into the virtualenv and fetches it.
# Then scripts/compile_sandbox_bytecode.py compiles the bytecode of what the sandboxed Python processes import
# (PyTorch, Triton, tvm-ffi, NumPy; ~13 s): they run with PYTHONDONTWRITEBYTECODE, so without it every import of
# PyTorch there would compile it again. Every other process writes the bytecode of what it imports itself (the
# Makefile clears PYTHONDONTWRITEBYTECODE for them); uv's --compile-bytecode of all of site-packages took ~50 s
# more of a 2-core machine. uv gets pip's own configuration (find-links, index URLs, constraint files, the CA
# file), so it sees the same packages pip would, and picks the best version over all indexes, as pip does.
# NO_UV=1, or uv failing, installs with pip instead.
set -euo pipefail
venv=$1
shift
py=$venv/bin/python
base=$(sed -n 's/^home = //p' "$venv/pyvenv.cfg")/python3 # the interpreter the virtualenv was made from
quiet=(-q --disable-pip-version-check)

venv_pip() {
  "$py" -m pip --version >/dev/null 2>&1 || "$py" -m ensurepip >/dev/null
  "$py" -m pip "${quiet[@]}" "$@"
}
with_pip() { venv_pip install "$@"; }
get_uv() {
  [ -x "$venv/bin/uv" ] && return 0
  if "$base" -m pip --version >/dev/null 2>&1; then
    "$base" -m pip "${quiet[@]}" install --no-deps --no-compile --target "$venv/uv-tool" 'uv>=0.5' >/dev/null 2>&1 &&
      ln -sf ../uv-tool/bin/uv "$venv/bin/uv" && return 0
  fi
  venv_pip install 'uv>=0.5' >/dev/null 2>&1
}
if [ -n "${NO_UV:-}" ]; then
  with_pip "$@"
  exit 0
fi
if ! get_uv; then
  echo "uv is not available; installing with pip" >&2
  with_pip "$@"
  exit 0
fi

# pip's configuration, as `pip config list` prints it (files and PIP_* variables): key='value' lines whose values
# may hold several space-separated entries. Read through the virtualenv's pip where it has one (only where uv had
# to come through it), else the base interpreter's: the same files and variables.
config_pip=("$py" -m pip)
"$py" -m pip --version >/dev/null 2>&1 || config_pip=("$base" -m pip)
args=()
while IFS= read -r line; do
  key=${line%%=*}
  key=${key#*.}
  value=${line#*=}
  value=${value#\'}
  value=${value%\'}
  for item in $value; do
    case $key in
      find-links) args+=(--find-links "$item") ;;
      index-url) args+=(--index-url "$item") ;;
      extra-index-url) [[ $item == file://* && ! -d ${item#file://} ]] || args+=(--extra-index-url "$item") ;;
      constraint) [ -f "$item" ] && args+=(--constraint "$item") ;;
      cert) export SSL_CERT_FILE=$item ;;
    esac
  done
done < <("${config_pip[@]}" config list 2>/dev/null || true)

if ! "$venv/bin/uv" pip install --quiet --python "$py" --index-strategy unsafe-best-match "${args[@]}" "$@"; then
  echo "uv could not install the requirements; trying pip" >&2
  with_pip "$@"
  exit 0
fi
"$py" "$(dirname "$0")/compile_sandbox_bytecode.py"
