"""What the portal publishes from the evaluator's work folder (portal/submissions/runner.py `_audit_files`).

Issue 28: links planted in the build folder to /proc/self/environ, the admin password file and the database were
served as evaluation artifacts. Only the folders the evaluator's trusted side writes are published now, read under
the hostile-file rule. Mutation caught: collecting with `rglob` + `read_bytes` (links followed) over the whole
work folder, or reading the build folder at all."""

from __future__ import annotations

import os

from portal.submissions.runner import _audit_files


def _plant(keep, secret):
    build = keep / "build"
    build.mkdir(parents=True)
    for name in ("kernel.sass", "environ.log", "db.csv", "password.txt"):
        os.symlink(secret, build / name)
    (build / "honest.log").write_text("compiled in the sandbox: not published either")
    trusted = keep / "build-trusted"
    trusted.mkdir()
    (trusted / "kernel.sass").write_text("        /*0000*/ HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;\n")
    logs = keep / "logs"
    logs.mkdir()
    (logs / "candidate.log").write_text("candidate output")
    (keep / "profile").mkdir()
    os.symlink(secret, keep / "profile" / "ncu-raw.csv")


def test_only_trusted_folders_are_published_and_links_never_followed(tmp_path):
    secret = tmp_path / "admin_password.txt"
    secret.write_text("SECRET_KEY=hunter2")
    keep = tmp_path / "evaluator"
    _plant(keep, secret)
    files = _audit_files(keep)
    assert set(files) == {"kernel.sass", "candidate.log"}
    assert b"hunter2" not in b"".join(files.values())
    assert files["kernel.sass"].startswith(b"        /*0000*/ HGMMA")


def test_a_link_inside_a_trusted_folder_publishes_nothing_from_it(tmp_path):
    secret = tmp_path / "portal.sqlite3"
    secret.write_text("pbkdf2_sha256$password-hashes")
    keep = tmp_path / "evaluator"
    _plant(keep, secret)
    os.symlink(secret, keep / "logs" / "secrets.txt")
    os.symlink("/dev/zero", keep / "build-trusted" / "zero.txt")
    os.symlink("/", keep / "build-trusted" / "root")
    files = _audit_files(keep)  # returns (no endless read of /dev/zero, no walk of /)
    assert not files
    assert all(b"pbkdf2" not in data for data in files.values())


def test_a_trusted_folder_replaced_by_a_link_is_skipped(tmp_path):
    secret_dir = tmp_path / "data"
    secret_dir.mkdir()
    (secret_dir / "portal.log").write_text("REDIS_URL=redis://:secret@host")
    keep = tmp_path / "evaluator"
    keep.mkdir()
    os.symlink(secret_dir, keep / "logs")
    assert _audit_files(keep) == {}
