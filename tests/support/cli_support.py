"""Running the `ptxbench` client (client/, installed by `make deps-test`) as a user would: its own process, a
config folder of the test's own, no terminal."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


class FakePortal(BaseHTTPRequestHandler):
    """A portal that answers what a test's subclass says (a lying or hostile one): the edge of the CLI's world."""

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` on a free loopback port, for the duration: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for the serving loop's next poll: half a second at the default, for every test.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
