#!/usr/bin/env bash
# Where `make test`'s CPU goes: runs the suite's pytest command (as `make test` runs it) under Linux process
# accounting and prints the CPU seconds of every process that exited, grouped by command name and user (65534 is
# the sandbox's user: candidate, baseline and compiler processes), largest first. Needs root and the `acct`
# package (accton, dump-acct); run after `make deps-test`, with nothing else busy on the machine.
#   bash bench/test_suite_cpu.sh [OUT]     (OUT: where the table goes; default stdout only)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in accton dump-acct; do
  command -v "$tool" >/dev/null || { echo "needs $tool (Debian package acct)" >&2; exit 2; }
done
pacct=$(mktemp /tmp/suite-pacct.XXXXXX)
accton "$pacct" >/dev/null
trap 'accton off >/dev/null 2>&1 || true; rm -f "$pacct"' EXIT
.venv/bin/python -m pytest -m "not gpu" -q -n 2 --dist worksteal -p no:cacheprovider | tail -1
accton off >/dev/null
dump-acct "$pacct" | python3 bench/acct_table.py | tee ${1:+"$1"}
