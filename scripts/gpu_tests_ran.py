"""Whether a GPU test pass showed anything: reads pytest's JUnit XML (scripts/gpu_tests.sh).

Prints "N run (P passed, F failed, S skipped)" and exits 0 when at least one test ran; otherwise prints why none
did (every test skipped, with the distinct skip reasons, or no report at all) and exits 1, so that the caller
reports "not run" instead of pytest's exit status 0.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def summary(report: Path) -> tuple[bool, str]:
    if not report.is_file():
        return False, f"no test report at {report}: pytest did not get as far as running tests"
    try:
        root = ET.parse(report).getroot()  # noqa: S314 - pytest's own report, written by this pass
    except ET.ParseError as exc:
        return False, f"unreadable test report {report}: {exc}"
    cases = root.findall(".//testcase")
    skipped = [c for c in cases if c.find("skipped") is not None]
    failed = [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    ran = len(cases) - len(skipped)
    if ran == 0:
        reasons = sorted({(c.find("skipped").get("message") or "").strip() for c in skipped} - {""})
        why = "; ".join(reasons[:5]) or "no reason given"
        return False, f"{len(skipped)} collected, all skipped: {why}" if cases else "no GPU test collected"
    return True, f"{ran} run ({ran - len(failed)} passed, {len(failed)} failed, {len(skipped)} skipped)"


if __name__ == "__main__":
    ok, text = summary(Path(sys.argv[1]))
    print(text)
    sys.exit(0 if ok else 1)
