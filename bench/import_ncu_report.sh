#!/usr/bin/env bash
# Run on a host with Nsight Compute (no GPU needed): print the pages of an existing report the way the evaluator's
# arch stage reads them (evaluator/arch_check/ncu.py, read_report), plus the session page (device name, compute
# capability) and every metric the report holds, so a report captured elsewhere can become a parser fixture.
#   bash bench/import_ncu_report.sh REPORT.ncu-rep ARCH OUTDIR
# Writes OUTDIR/NAME-{session,raw-all,raw-rule,source}.csv (NAME: the report's file name without .ncu-rep), each
# gzipped, and OUTDIR/NAME-import.log with the commands and ncu's version.
set -euo pipefail
report=$(realpath "${1:?REPORT.ncu-rep}")
arch=${2:?ARCH, e.g. sm_100a}
out=$(realpath -m "${3:?OUTDIR}")  # both resolved before the cd below
cd "$(dirname "$0")/.."
mkdir -p "$out"
name=$(basename "$report" .ncu-rep)
# The raw-page metrics the evaluator asks for on this architecture: the registry's, not a copy.
metrics=$(python3 -c 'import sys; from evaluator.arch_check.ncu import _metrics; print(_metrics(sys.argv[1]))' "$arch")
log=$out/$name-import.log
{ date -u +%FT%TZ; ncu --version | tail -1; } >"$log"
page() {  # page SUFFIX ARGS...: one import, its output gzipped, its command logged
  local suffix=$1
  shift
  echo "ncu --import $report $*" >>"$log"
  ncu --import "$report" "$@" | gzip -n >"$out/$name-$suffix.csv.gz"
}
page session --page session --csv
page raw-all --page raw --csv --print-kernel-base mangled
page raw-rule --page raw --csv --metrics "$metrics" --print-kernel-base mangled
page source --page source --print-source sass --csv --print-kernel-base mangled
ls -la "$out" >>"$log"
