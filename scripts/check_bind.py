"""Exit 1 with one line when `make run`'s address (BIND, host:port) is taken, naming a free BIND to use instead.

Binds with SO_REUSEADDR as gunicorn does, so a port left in TIME_WAIT by the last run counts as free and only a
listening server counts as taken."""

from __future__ import annotations

import socket
import sys

SEARCH = 50  # ports after the taken one tried for a suggestion


def _free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def main(bind: str) -> int:
    host, _, port_text = bind.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"  # noqa: S104 - the user's own BIND
    if not port_text.isdigit():
        print(f"BIND={bind!r} is not host:port (for example BIND=127.0.0.1:8000)", file=sys.stderr)
        return 1
    port = int(port_text)
    if _free(host, port):
        return 0
    spare = next((p for p in range(port + 1, min(port + SEARCH, 65535) + 1) if _free(host, p)), None)
    shown = f"[{host}]" if ":" in host else host
    hint = f": stop it, or serve on another port with BIND={shown}:{spare} make run" if spare else ""
    print(f"{shown}:{port} is already in use (another `make run`?){hint}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:8000"))
