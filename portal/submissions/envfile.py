"""The secrets file a GPU host keeps (SECRET_KEY, DATABASE_URL, AGENT_FERNET_KEY, ...; the systemd units'
EnvironmentFile=) must not be readable by other users of the host: candidates' compilers and kernels run there,
and a file any user can read is one include or one sandbox escape away from a public log. The GPU worker checks
the file it is given (`--env-file` or PTXBENCH_ENV_FILE) and refuses to start otherwise."""

from __future__ import annotations

import stat
from pathlib import Path


class EnvFileUnsafe(Exception):
    """The env file is missing, not a regular file, or readable or writable by every user."""


def env_file_check(path: str | Path) -> Path:
    """Return the path when it is a regular file that other users can neither read nor write."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise EnvFileUnsafe(f"the env file {path} cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise EnvFileUnsafe(f"the env file {path} is not a regular file")
    mode = stat.S_IMODE(info.st_mode)
    if mode & (stat.S_IROTH | stat.S_IWOTH):
        raise EnvFileUnsafe(
            f"the env file {path} is readable or writable by every user of this host (mode {mode:04o}); "
            f"it holds the portal's secrets: chmod 600 {path} (or 640 with a group of the service user only)"
        )
    return path
