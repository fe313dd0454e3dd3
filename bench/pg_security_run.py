"""The visibility, quota, fairness, API-error, ban and throttle tests against a private PostgreSQL cluster
(bench/reliability_stack.PrivatePostgres: Debian's PostgreSQL 15, a throwaway cluster on loopback); the result of
a run is kept in docs/runs/security/.

    .venv/bin/python bench/pg_security_run.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.reliability_stack import PrivatePostgres  # noqa: E402

FILES = [
    "tests/security/test_visibility.py",
    "tests/agent/test_quotas.py",
    "tests/agent/test_agent_fairness.py",
    "tests/core/test_api_errors.py",
    "tests/accounts/test_security_ban.py",
    "tests/accounts/test_throttles.py",
]


def main() -> int:
    pg = PrivatePostgres(Path(tempfile.mkdtemp(prefix="pgsec-")))
    url = pg.start()
    print("cluster:", url.split("@")[-1], flush=True)
    try:
        start = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FILES],
            cwd=REPO,
            env={**os.environ, "DATABASE_URL": url},
            capture_output=True,
            text=True,
        )
        print(run.stdout[-3000:], run.stderr[-1000:])
        print(f"wall {time.monotonic() - start:.0f} s, exit {run.returncode}")
        return run.returncode
    finally:
        pg.stop()


if __name__ == "__main__":
    raise SystemExit(main())
