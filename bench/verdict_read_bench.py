"""How long reading a stored verdict takes: the evaluator's reader (`verdict.from_dict`) and the portal's
(`parse_verdict`: complete the document's missing fields, then `from_dict`), per document, over the committed
reference verdicts of docs/verdicts/ (real H200 verdicts, each with its timing samples). The portal reads a verdict
where it receives one and where it seeds or imports rows.

    DEBUG=1 PORTAL_DATA_DIR=/tmp/verdict-bench .venv/bin/python bench/verdict_read_bench.py [--repo DIR]

--repo reads the code of another checkout (e.g. a `git worktree` of an older commit) on the same documents, so that
two trees are compared in one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]


def per_call_ms(read: Callable[[Any], Any], documents: list[dict[str, Any]], seconds: float = 1.0) -> float:
    """The median over five runs of the mean time of one read, each run reading every document for `seconds`."""
    runs = []
    for _ in range(5):
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            for document in documents:
                read(document)
            calls += len(documents)
        runs.append((time.perf_counter() - start) * 1e3 / calls)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=HERE, help="the checkout whose code reads (default: this one)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.repo.resolve()))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from evaluator.both_sides.verdict import from_dict
    from portal.core.verdict_record import parse_verdict

    paths = sorted((HERE / "docs" / "verdicts").glob("*.json"))
    documents = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    documents = [d for d in documents if isinstance(d, dict) and "workloads" in d]
    samples = sum(
        len((w.get("performance") or {}).get("candidate", {}).get("samples_ms", []))
        for d in documents
        for w in d["workloads"]
    )
    print(f"code: {args.repo.resolve()}  documents: {len(documents)} ({samples} candidate timing samples)")
    print(f"from_dict      {per_call_ms(from_dict, documents):.4f} ms a document")
    print(f"parse_verdict  {per_call_ms(parse_verdict, documents):.4f} ms a document")


if __name__ == "__main__":
    main()
