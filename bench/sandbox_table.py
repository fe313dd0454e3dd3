"""The table of bench/sandbox_commands.sh: its wrapper's rows (wall seconds, the bwrap command line, the hashed
files) grouped by the command run inside the sandbox, then the compiles that ran more than once on the same source
with the same flags (temporary folders aside)."""

from __future__ import annotations

import re
import sys
from collections import defaultdict

TEMP = re.compile(r"/tmp/\S+")  # noqa: S108 - matches temporary folders in the log; opens nothing


def inner_command(argv: str) -> str:
    """What ran inside: the words after bwrap's last `--`, past setpriv's own `--`, to two words or `-m module`."""
    words = argv.split(" -- ")[-1].split()
    if not words:
        return "(none)"
    program = words[0].rsplit("/", 1)[-1]
    if program.startswith("python") and len(words) > 2 and words[1] == "-m":
        return f"{program} -m {words[2]}"
    if program.startswith("python") and len(words) > 1:
        return f"{program} {words[1][:20]}"
    return f"{program} {words[1]}" if len(words) > 1 and words[1].startswith("-") else program


def main(path: str) -> None:
    by_command: dict[str, list[float]] = defaultdict(list)
    compiles: dict[tuple[str, str], list[float]] = defaultdict(list)
    for line in open(path, encoding="utf-8", errors="replace"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3:
            continue
        try:
            seconds = float(parts[0])
        except ValueError:
            continue
        command = inner_command(parts[1])
        by_command[command].append(seconds)
        if command.startswith("nvcc") and parts[2].strip():
            compiles[(parts[2].strip(), TEMP.sub("T", parts[1].split(" -- ")[-1]))].append(seconds)
    total = sum(sum(v) for v in by_command.values())
    print(f"{'wall s':>8} {'runs':>5} {'share':>6}  command inside the sandbox")
    for command, times in sorted(by_command.items(), key=lambda kv: -sum(kv[1])):
        print(f"{sum(times):8.1f} {len(times):5d} {sum(times) / total:6.1%}  {command}")
    print(f"{total:8.1f} {sum(map(len, by_command.values())):5d}         all")
    repeats = {key: times for key, times in compiles.items() if len(times) > 1}
    runs = sum(len(t) for t in compiles.values())
    extra = sum(sum(sorted(t)[:-1]) for t in repeats.values())  # all but the slowest run of each
    print(
        f"\ncompiles with a hashed source: {runs} runs of {len(compiles)} distinct (source, flags); "
        f"{sum(len(t) - 1 for t in repeats.values())} repeats, {extra:.1f} s"
    )
    for (files, _), times in sorted(repeats.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {len(times):3d} x {files}: " + ", ".join(f"{t:.1f}" for t in times) + " s")


if __name__ == "__main__":
    main(sys.argv[1])
