#!/usr/bin/env bash
# Which sandboxed commands `make test` runs and how long each kind takes: runs the suite's pytest command with
# EVALUATOR_BWRAP pointing at a wrapper that times every bubblewrap run (wall seconds: bwrap's pid namespace hides
# its children's CPU time from a wait) and notes the sha256 of each .cu or .py file named on its command line, then
# prints bench/sandbox_table.py's table: time by command, and the compiles that repeat a source and its flags (a
# compile cache hit runs nothing, so a repeat is a failure, which the cache never keeps, or a test that compiles
# into a cache of its own or none). Run after `make deps-test` and `make system-test`, with nothing else busy.
#   bash bench/sandbox_commands.sh [OUT]     (OUT: where the table goes; default stdout only)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/sandbox-commands.XXXXXX)
trap 'rm -rf "$work"' EXIT
real_bwrap=$(command -v bwrap) || { echo "needs bwrap (make system-test installs it)" >&2; exit 2; }
cat > "$work/bwrap" <<WRAP
#!/bin/bash
files=""
for a in "\$@"; do
  case "\$a" in *.cu|*.py) [ -f "\$a" ] && files="\$files \$(basename "\$a"):\$(sha256sum "\$a" | cut -c1-12)" ;; esac
done
TIMEFORMAT=%R
{ time "$real_bwrap" "\$@" 2>&3; } 3>&2 2>"$work/time.\$\$"
rc=\$?
printf '%s\t%s\t%s\n' "\$(tail -1 "$work/time.\$\$")" "\$(printf '%s ' "\$@" | tr '\t\n' '  ')" "\$files" >> "$work/runs.tsv"
rm -f "$work/time.\$\$"
exit \$rc
WRAP
chmod +x "$work/bwrap"
started=$(date -u '+%F %H:%M')
summary=$(EVALUATOR_BWRAP="$work/bwrap" .venv/bin/python -m pytest -m "not gpu" -q -n 2 --dist worksteal \
  -p no:cacheprovider | tail -1)
{
  echo "# $started to $(date -u '+%H:%M') UTC, $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'): $summary"
  python3 bench/sandbox_table.py "$work/runs.tsv"
} | tee ${1:+"$1"}
