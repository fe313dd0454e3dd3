"""`make run` checks its address before it starts or announces anything: a second one (or any server on BIND)
gets one line naming a BIND that is free, not a banner followed by gunicorn's errors."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_taken_port_is_refused_first_with_a_bind_to_use(tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        env = {**os.environ, "BIND": f"127.0.0.1:{port}", "PORTAL_DATA_DIR": str(tmp_path / "data")}
        result = subprocess.run(
            ["bash", "scripts/run_portal.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 1
    assert "Portal on" not in result.stdout and "DEBUG=1" not in result.stdout  # nothing announced
    line = result.stderr.strip()
    assert line.startswith(f"127.0.0.1:{port} is already in use") and "BIND=127.0.0.1:" in line, line
    suggested = int(line.rsplit("BIND=127.0.0.1:", 1)[1].split()[0])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", suggested))  # the suggestion is free
    assert not (tmp_path / "data" / "redis").exists()  # nothing started
