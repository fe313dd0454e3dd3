"""A stand-in for a toolkit reader (a shell script, the edge of the world in these tests) that reports what it can
reach from where the evaluator starts it: a secret beside the file it reads, that file for writing, the network.
The file is the script's last argument, as the evaluator passes it."""

from __future__ import annotations

import stat
from pathlib import Path

REACH = """if cat {secret} >/dev/null 2>&1; then echo "sibling: seen"; else echo "sibling: hidden"; fi
if (echo tampered >> "$last") 2>/dev/null; then echo "write: done"; else echo "write: refused"; fi
echo "net: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' ')"
"""


def plant(
    tmp_path: Path, *, folder: str, name: str, content: bytes, tool: str, before: str = "", after: str = ""
) -> tuple[Path, Path]:
    """`content` as `folder/name` with a secret beside it, and a probe named `tool` in a folder of its own that runs
    the shell lines `before`, reports its reach, then runs `after`."""
    home = tmp_path / folder
    home.mkdir()
    target = home / name
    target.write_bytes(content)
    secret = home / "secret.env"
    secret.write_text("SECRET_KEY=not-for-tools")
    tools = tmp_path / f"{tool}-bin"
    tools.mkdir()
    probe = tools / tool
    probe.write_text("#!/bin/sh\nfor last; do :; done\n" + before + REACH.format(secret=secret) + after)
    probe.chmod(probe.stat().st_mode | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return target, probe


def reach(printed: str) -> dict[str, str]:
    """The probe's report as a dict."""
    return dict(line.split(": ", 1) for line in printed.splitlines() if ": " in line)
