#!/usr/bin/env bash
# Install Python requirements into a virtualenv: `scripts/install_python.sh VENV REQUIREMENT...`.
#
# With uv (installed into the virtualenv from PyPI first) when it can be had: it fetches and unpacks in parallel
# (the test dependencies: ~8 s from uv's cache). Then scripts/compile_sandbox_bytecode.py compiles the bytecode of
# what the sandboxed Python processes import (PyTorch, Triton, tvm-ffi, NumPy; ~25 s): they run with
# PYTHONDONTWRITEBYTECODE, so without it every import of PyTorch there would compile it again. Every other process
# writes the bytecode of what it imports itself (uv's --compile-bytecode of all of site-packages: ~50 s more of a
# 2-core machine). uv gets pip's own configuration (find-links, index URLs, constraint files, the CA file), so it
# sees the same packages pip would, and picks the best version over all indexes, as pip does.
# NO_UV=1, or uv failing, installs with pip instead.
set -euo pipefail
venv=$1
shift
py=$venv/bin/python
pip=("$py" -m pip -q --disable-pip-version-check)

with_pip() { "${pip[@]}" install "$@"; }

if [ -n "${NO_UV:-}" ]; then
  with_pip "$@"
  exit 0
fi
if [ ! -x "$venv/bin/uv" ] && ! "${pip[@]}" install 'uv>=0.5' >/dev/null 2>&1; then
  echo "uv is not available; installing with pip" >&2
  with_pip "$@"
  exit 0
fi

# pip's configuration, as `pip config list` prints it (files and PIP_* variables): key='value' lines whose values
# may hold several space-separated entries.
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
done < <("$py" -m pip config list 2>/dev/null || true)

if ! "$venv/bin/uv" pip install --quiet --python "$py" --index-strategy unsafe-best-match "${args[@]}" "$@"; then
  echo "uv could not install the requirements; trying pip" >&2
  with_pip "$@"
  exit 0
fi
"$py" "$(dirname "$0")/compile_sandbox_bytecode.py"
