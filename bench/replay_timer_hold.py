"""The profiled-call timer check (evaluator.checks.integrity.ncu_hold) as the evaluator decides it now, replayed over
every committed corpus verdict that has a profile, beside what the verdict recorded when it ran.

    python bench/replay_timer_hold.py [CORPUS_JSON_GZ ...]
    python bench/replay_timer_hold.py --spread [FILE ...]

Default: every docs/runs/integrity/**/corpus*.json.gz. Prints how many verdicts were replayed and one line for each
whose `timer_disagreement` decision differs now (run, entry, what the corpus expected, the profiled time over the
ranked latency, the host floor). A change to the check's margin or yardstick shows here what it would have done to
every run on record before any GPU runs it again. The recorded decision is the rule of its day: runs before the
trusted clock ranked (h200-2026-12-01*, 12-03) held the profile against the in-process median within 50%, so what
differs there is that change's doing.

`--spread`: where honest kernels' profiled calls fall against their yardstick, and which other entries fall inside
the margin on the slower side (the side a kernel that runs other code when not profiled lands on), from every
committed corpus file, reference verdict (`docs/runs/**/verdicts/*.json`) and false-hold row
(`docs/runs/**/holds*.jsonl`, its `trusted_ratio`), or from the FILEs named (by suffix: .json.gz, .json, .jsonl).
Honest: the references, the false-hold rows, and corpus entries expected to be held for nothing ("held none").
It shows what a smaller margin would cost honest kernels and what it would catch, before anyone chooses one.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.arch_check.arch_stage import CROSS_CHECK_ONLY  # noqa: E402
from evaluator.both_sides.verdict import from_dict  # noqa: E402
from evaluator.checks.integrity import NCU_MARGIN, TIMER_DISAGREEMENT, ncu_hold  # noqa: E402
from evaluator.checks.integrity_record import timer_yardstick  # noqa: E402


def _outcomes(path: Path) -> Iterator[dict[str, Any]]:
    """Every outcome of every round in a corpus file (tests/adversarial/corpus.py writes a list of rounds)."""
    for round_ in json.loads(gzip.decompress(path.read_bytes())):
        yield from (o for o in round_.get("outcomes", []) if isinstance(o.get("verdict"), dict))


def replay(entry: dict[str, Any]) -> tuple[bool, bool, float, float | None] | None:
    """(held when it ran, held now, profiled over its yardstick, host floor allowed), or None without a profiled,
    timed workload."""
    verdict = from_dict(entry["verdict"])
    check = verdict.arch_check
    reported_ms, host_floor_ms = timer_yardstick(check, verdict)
    if not check.ncu_gpu_time_ms or not reported_ms:
        return None
    holds = verdict.integrity.holds if verdict.integrity is not None else []
    was = any(h.code == TIMER_DISAGREEMENT for h in holds)
    now = ncu_hold(
        reported_ms=reported_ms,
        ncu_ms=check.ncu_gpu_time_ms,
        # The verdict keeps no flag for a profile taken only to cross-check the timer; its reason says so.
        slower_only=check.reason.endswith(CROSS_CHECK_ONLY),
        host_floor_ms=host_floor_ms,
    )
    return was, now is not None, check.ncu_gpu_time_ms / reported_ms, host_floor_ms


Ratio = tuple[float, str, str]  # profiled time over its yardstick, the run's folder, the kernel or entry


def _run_name(path: Path) -> str:
    """The run folder a file belongs to (docs/runs/integrity/<run>/...), else the file's own folder."""
    parts = path.parts
    return parts[parts.index("integrity") + 1] if "integrity" in parts[:-1] else path.parent.name


def spread_ratios(files: list[Path]) -> tuple[list[Ratio], list[Ratio]]:
    """(honest ratios, ratios of entries that are not controls) from corpus files, verdicts and false-hold rows."""
    honest: list[Ratio] = []
    others: list[Ratio] = []
    seen_rows: set[str] = set()
    for path in files:
        run = _run_name(path)
        if path.name.endswith(".json.gz"):
            for entry in _outcomes(path):
                result = replay(entry)
                if result is not None:
                    control = "held none" in str(entry.get("expected", ""))
                    (honest if control else others).append((result[2], run, entry["name"]))
        elif path.suffix == ".json":
            result = replay({"verdict": json.loads(path.read_text())})
            if result is not None:
                honest.append((result[2], run, path.stem))
        elif path.suffix == ".jsonl":
            for line in path.read_text().splitlines():
                row = json.loads(line) if line.strip() else {}
                # A part's rows are also gathered into the run's holds.jsonl: each evaluation counts once.
                key = str(row.get("evaluation") or line)
                if row.get("trusted_ratio") and key not in seen_rows:
                    seen_rows.add(key)
                    honest.append((float(row["trusted_ratio"]), run, str(row.get("kernel", "?"))))
    return honest, others


def _corpus_files() -> list[Path]:
    """Every committed corpus file, a pass's (`<run>/pass/corpus.json.gz`) and a part's (`corpus-entries.json.gz`)."""
    return sorted((REPO / "docs" / "runs" / "integrity").glob("**/corpus*.json.gz"))


def _spread_files() -> list[Path]:
    runs = REPO / "docs" / "runs"
    return sorted([*_corpus_files(), *runs.glob("**/verdicts/*.json"), *runs.glob("**/holds*.jsonl")])


def spread(files: list[Path], margin: float = NCU_MARGIN) -> list[str]:
    honest, others = spread_ratios(files)
    if not honest:
        return ["no honest profiled ratios found"]
    top = max(honest)
    low = min(honest)
    lines = [
        f"honest profiled calls: {len(honest)}; over their yardstick {low[0]:.3f} ({low[2]}, {low[1]}) to "
        f"{top[0]:.3f} ({top[2]}, {top[1]}); held beyond {1 + margin:.2f} on the slower side",
        "other entries profiled slower than their yardstick but within the margin (entry: runs, lowest to highest):",
    ]
    inside: dict[str, list[float]] = {}
    for ratio, _run, name in others:
        if 1.0 < ratio <= 1.0 + margin:
            inside.setdefault(name, []).append(ratio)
    for name, ratios in sorted(inside.items(), key=lambda kv: max(kv[1])):
        lines.append(f"  {name}: {len(ratios)}, {min(ratios):.3f} to {max(ratios):.3f}")
    return lines


def main(argv: list[str]) -> int:
    if argv[:1] == ["--spread"]:
        print("\n".join(spread([Path(a) for a in argv[1:]] or _spread_files())))
        return 0
    files = [Path(a) for a in argv] or _corpus_files()
    replayed, changed = 0, []
    for path in files:
        for entry in _outcomes(path):
            result = replay(entry)
            if result is None:
                continue
            replayed += 1
            was, now, ratio, floor = result
            if was != now:
                changed.append(
                    f"{path.parent.name}  {entry['name']}  expected {entry.get('expected', '?')}  "
                    f"{'held' if was else 'not held'} -> {'held' if now else 'not held'}  "
                    f"ncu/yardstick {ratio:.3f}  host floor {floor if floor is None else round(floor, 5)}"
                )
    print(f"profiled verdicts replayed: {replayed} in {len(files)} files; decided otherwise now: {len(changed)}")
    for line in changed:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
