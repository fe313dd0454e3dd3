#!/usr/bin/env bash
# Run HERE: pack what scripts/gpu_pass.sh needs on an offline GPU host into .carry/ (git-ignored), small enough
# to travel with the working tree through the device tool (64 MiB in all): the Python 3.12 packages of
# .gpu-bundle/ (scripts/fetch_gpu_bundle.sh) installed for the host's platform, minus what the host image has
# (narwhals, markdown-it-py, mdurl, pyarrow), minus translations and bytecode, as one xz tarball; plus the .debs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .gpu-bundle/whl ] || bash scripts/fetch_gpu_bundle.sh
site=$(mktemp -d)/carrysite
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" --python-version 3.12 --implementation cp \
  --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_25_x86_64 \
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  $(ls .gpu-bundle/whl/*.whl | grep -v -E '/(narwhals|markdown_it_py|mdurl|pyarrow)-')
find "$site" -type d -name locale -prune -exec sh -c 'for d in "$1"/*; do [ "$(basename "$d")" = en ] || [ "$(basename "$d")" = __init__.py ] || rm -rf "$d"; done' _ {} \;
find "$site" -name __pycache__ -prune -exec rm -rf {} +
mkdir -p .carry
tar cf - -C "$(dirname "$site")" carrysite | xz -T2 -6 > .carry/site.tar.xz
cp .gpu-bundle/deb/*.deb .carry/
grep -qxF '/.carry/' .git/info/exclude 2>/dev/null || echo '/.carry/' >> .git/info/exclude
du -sh .carry; ls -la .carry
