"""Operations: a world-readable env file on a GPU host (SECRET_KEY, DATABASE_URL,
AGENT_FERNET_KEY) is one quoted file away from a full compromise. `gpu_worker` refuses to start when the env
file it is given (--env-file or PTXBENCH_ENV_FILE) is readable or writable by every user."""

from __future__ import annotations

import os

import pytest
from django.core.management import CommandError, call_command

from portal.submissions.models import GpuWorker

WORKER = ("gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--burst")


@pytest.fixture
def env_file(tmp_path):
    path = tmp_path / "ptxbench.env"
    path.write_text("SECRET_KEY=not-for-everyone\nDATABASE_URL=postgres://ptx:pw@db/ptx\n")
    return path


@pytest.mark.parametrize("mode", [0o644, 0o604, 0o602, 0o666])
@pytest.mark.django_db
def test_a_world_readable_or_writable_env_file_is_refused(env_file, mode):
    os.chmod(env_file, mode)
    with pytest.raises(CommandError, match=f"not serving: the env file .* every user .*mode {mode:04o}.*chmod 600"):
        call_command(*WORKER, "--env-file", str(env_file), "--name", "refused")
    assert not GpuWorker.objects.filter(name="refused").exists()  # refused before registering


@pytest.mark.django_db
def test_the_env_file_can_come_from_the_environment_and_must_exist(env_file, tmp_path, monkeypatch):
    os.chmod(env_file, 0o644)
    monkeypatch.setenv("PTXBENCH_ENV_FILE", str(env_file))
    with pytest.raises(CommandError, match="every user"):
        call_command(*WORKER)
    monkeypatch.setenv("PTXBENCH_ENV_FILE", str(tmp_path / "missing.env"))
    with pytest.raises(CommandError, match="cannot be read"):
        call_command(*WORKER)
    monkeypatch.setenv("PTXBENCH_ENV_FILE", str(tmp_path))
    with pytest.raises(CommandError, match="not a regular file"):
        call_command(*WORKER)


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o400])
@pytest.mark.django_db(transaction=True)
def test_a_private_env_file_lets_the_worker_start(env_file, mode):
    os.chmod(env_file, mode)
    call_command(*WORKER, "--env-file", str(env_file), "--allow-unsandboxed", "--name", f"ok-{mode:o}")
    assert GpuWorker.objects.get(name=f"ok-{mode:o}").stopped_at is not None
