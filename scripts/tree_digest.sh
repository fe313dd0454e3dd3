#!/usr/bin/env bash
# A digest of the files that decide a GPU run's verdicts (evaluator/, tasks/, tests/adversarial/, scripts/), so
# that a run's log names the tree it ran on. The device tool sends the working tree, but the git metadata of its
# copy can be older than the files, so a `git log` there is not evidence of what ran.
#   bash scripts/tree_digest.sh            the digest of those folders' files under the current folder (run it in
#                                          the checkout's root; ignored __pycache__ left out)
#   bash scripts/tree_digest.sh COMMIT     the digest of the same files at COMMIT of this script's repository, to
#                                          match a run's log against
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
folders=(evaluator tasks tests/adversarial scripts)
digest() {
  find "${folders[@]}" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z \
    | xargs -0 sha256sum | sha256sum | cut -c1-16
}
if [ $# -eq 0 ]; then
  digest
  exit 0
fi
commit=$(git -C "$repo" rev-parse --verify "$1^{commit}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$repo" archive "$commit" "${folders[@]}" | tar -x -C "$tmp"
cd "$tmp" && digest
