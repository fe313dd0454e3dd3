"""Does Nsight Compute print the same pages when it imports a report inside the sandbox? The sandboxed import
(evaluator/arch_check/ncu.py `read_report(jail=...)`, on unless EVALUATOR_NCU_IMPORT_SANDBOX=0) was turned on once a GPU
host showed it: this imports each report given twice, here and in the sandbox the profile runs in, and compares the source and
raw pages byte for byte.

    python3 bench/probe_ncu_import_sandbox.py REPORT.ncu-rep [...]

On the GPU host, from the repo root, with the carried packages installed (scripts/gpu_host_env.sh); the reports
can be bench/probe_ncu_source_blocks.sh's (`gpu_pass.sh pass` with PASS_SOURCE_BLOCKS=1 runs both). Exits 1 when a
page differs or an import fails.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.arch_check import ncu as ncu_mod  # noqa: E402
from evaluator.arch_check.arch_stage import REPORT_MAX_BYTES  # noqa: E402
from evaluator.binaries.binary_tools import ToolFailed  # noqa: E402
from evaluator.both_sides import hostile_files  # noqa: E402
from evaluator.isolation.jail import open_jail  # noqa: E402


def main(reports: list[str]) -> int:
    ncu = ncu_mod.find_ncu()
    if ncu is None or not reports:
        print("needs ncu on PATH and at least one report")
        return 2
    jail = open_jail(allow_unsandboxed=False)
    print(f"ncu {ncu_mod.ncu_version(ncu)} at {ncu}; sandbox {jail.mode} {jail.bwrap_version or ''}")
    print(f"{'report':40} {'here s':>6} {'jail s':>6} {'source bytes':>12} {'raw bytes':>9}  same")
    same_everywhere = True
    for name in reports:
        # The reports came out of profiled candidate processes: copied as the evaluator copies one (no link
        # followed, a regular file, capped) into a folder of this process's own.
        source = Path(name).absolute()
        folder = hostile_files.fresh_private_dir(Path(tempfile.mkdtemp(prefix="ncu-import-")) / "trusted")
        try:
            copy = hostile_files.copy_file(source.parent, source.name, folder / source.name, max_bytes=REPORT_MAX_BYTES)
        except hostile_files.Refused as exc:
            print(f"{source.name:40} refused: {exc}")
            same_everywhere = False
            continue
        t = time.monotonic()
        here = ncu_mod.read_report(ncu, copy, arch="sm_90a")
        t_here = time.monotonic() - t
        t = time.monotonic()
        try:
            jailed = ncu_mod.read_report(ncu, copy, arch="sm_90a", jail=jail)
        except ToolFailed as exc:
            print(f"{Path(name).name:40} {t_here:6.1f} failed in the sandbox: {exc}")
            same_everywhere = False
            continue
        t_jail = time.monotonic() - t
        same = here == jailed
        same_everywhere &= same
        sizes = f"{len(here[0]):>6}/{len(jailed[0]):<5} {len(here[1]):>4}/{len(jailed[1]):<4}"
        print(f"{Path(name).name:40} {t_here:6.1f} {t_jail:6.1f} {sizes}  {'yes' if same else 'NO'}")
        shutil.rmtree(folder.parent, ignore_errors=True)
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
