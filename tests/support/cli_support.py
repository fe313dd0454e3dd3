"""Running the `ptxbench` client (client/, installed by `make deps-test`) as a user would: its own process, a
config folder of the test's own, no terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(
    *args: str, url: str, home: Path, stdin: str = "", timeout: float = 300.0, **env_extra: str
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTXBENCH_")}
    env.update(
        {"PTXBENCH_URL": url, "XDG_CONFIG_HOME": str(home / "config"), "HOME": str(home), "NO_COLOR": "1"}, **env_extra
    )
    return subprocess.run(
        [sys.executable, "-m", "ptxbench_cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def config_file(home: Path) -> Path:
    return home / "config" / "ptxbench" / "config.json"
