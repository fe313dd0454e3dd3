"""Where two runs of the suite spend their time, test by test: reads two pytest logs written with
`--durations=0` (BEFORE, then AFTER) and prints the summed durations of the tests both runs have, of those only
one has, and the files whose summed time changed most. Scheduler, collection and worker start-up are not in
these figures, so they say whether the tests themselves got heavier, which wall-time pairs cannot tell apart from
the machine's drift.
  python3 bench/durations_compare.py BEFORE.log AFTER.log"""

from __future__ import annotations

import re
import sys
from collections import Counter

ROW = re.compile(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)")


def durations(path: str) -> Counter[str]:
    """Test id -> its setup, call and teardown seconds together."""
    tests: Counter[str] = Counter()
    for line in open(path, encoding="utf-8", errors="replace"):
        m = ROW.match(line)
        if m:
            tests[m.group(3)] += float(m.group(1))
    return tests


def by_file(tests: Counter[str]) -> Counter[str]:
    files: Counter[str] = Counter()
    for test, seconds in tests.items():
        files[test.split("::", 1)[0]] += seconds
    return files


def report(before: Counter[str], after: Counter[str], top: int = 12) -> list[str]:
    both = before.keys() & after.keys()
    only_b, only_a = before.keys() - both, after.keys() - both
    lines = [
        f"all tests: {sum(before.values()):.1f} s before ({len(before)}), {sum(after.values()):.1f} s after ({len(after)})",
        f"tests in both: {len(both)}, {sum(before[t] for t in both):.1f} s before, {sum(after[t] for t in both):.1f} s after",
        f"tests only before: {len(only_b)}, {sum(before[t] for t in only_b):.1f} s; "
        f"only after: {len(only_a)}, {sum(after[t] for t in only_a):.1f} s",
    ]
    fb, fa = by_file(before), by_file(after)
    changes = sorted(((fa[f] - fb[f], f) for f in fb.keys() | fa.keys()), reverse=True)
    lines.append("files whose tests took most more time (before -> after, s):")
    lines += [f"  {d:+7.1f}  {fb[f]:6.1f} -> {fa[f]:6.1f}  {f}" for d, f in changes[:top] if d > 0]
    lines.append("files whose tests took most less time:")
    lines += [f"  {d:+7.1f}  {fb[f]:6.1f} -> {fa[f]:6.1f}  {f}" for d, f in reversed(changes[-top:]) if d < 0]
    return lines


if __name__ == "__main__":
    print("\n".join(report(durations(sys.argv[1]), durations(sys.argv[2]))))
