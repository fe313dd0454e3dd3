"""The CPU seconds of the processes in a Linux process-accounting file, by command name and user, largest first:
reads `dump-acct FILE` on stdin (bench/test_suite_cpu.sh)."""

from __future__ import annotations

import collections
import sys


def main() -> int:
    # dump-acct: command|version|user ticks|system ticks|elapsed ticks|uid|gid|memory|io|pid|ppid|flags|exit|tty|time
    rows: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for line in sys.stdin:
        fields = [x.strip() for x in line.split("|")]
        if len(fields) < 6:
            continue
        row = rows[(fields[0], fields[5])]
        row[0] += 1
        row[1] += (float(fields[2]) + float(fields[3])) / 100
    total = sum(cpu for _, cpu in rows.values())
    print(f"{'command':20} {'uid':>6} {'processes':>9} {'cpu s':>7} {'share':>6}")
    for (command, uid), (count, cpu) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:20]:
        print(f"{command:20} {uid:>6} {int(count):9d} {cpu:7.1f} {cpu / total:6.1%}")
    print(f"{'all':20} {'':>6} {int(sum(n for n, _ in rows.values())):9d} {total:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
