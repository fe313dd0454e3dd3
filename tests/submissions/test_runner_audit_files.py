"""What the portal reads back from the evaluator's work folder (portal/submissions/evidence_files.py `collect`).

Links planted in the build folder to /proc/self/environ, the admin password file and the database must
never be served as evaluation artifacts. Files are read by exact name from the folders the evaluator's trusted side writes,
under the hostile-file rule (no link followed, regular files only, sizes capped before reading). Mutation caught:
collecting with `rglob` + `read_bytes` (links followed) over the whole work folder, or reading the build folder
at all."""

from __future__ import annotations

import dataclasses
import json
import os

from evaluator.binaries.sass import count_families
from portal.core.verdict_record import parse_verdict
from portal.submissions.evidence_files import collect
from tests.support import leaderboard_factories as lf

SASS = "\t\tFunction : k\n        /*0000*/ HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;\n"


def _document() -> dict:
    document = lf.verdict()
    document["sass"] = dataclasses.asdict(count_families(SASS, "sm_90a"))
    return document


def _collect(keep):
    document = _document()
    evidence = collect(
        keep,
        source_name="kernel.cu",
        source="// kernel\n",
        verdict_bytes=json.dumps(document).encode(),
        record=parse_verdict(document),
        max_bytes=32 << 20,
        log_max_bytes=64 << 10,
    )
    return {f.name: f.data for f in evidence.files}, evidence.not_kept


def _plant(keep, secret):
    build = keep / "build"
    build.mkdir(parents=True)
    for name in ("kernel.sass", "environ.log", "db.csv", "password.txt"):
        os.symlink(secret, build / name)
    (build / "honest.log").write_text("compiled in the sandbox: not published either")
    trusted = keep / "build-trusted"
    trusted.mkdir()
    (trusted / "kernel.sass").write_text(SASS)
    logs = keep / "logs"
    logs.mkdir()
    (logs / "candidate-0123abcd.stdout").write_text("candidate output")
    (keep / "profile").mkdir()
    os.symlink(secret, keep / "profile" / "ncu-raw.csv")


def test_only_trusted_folders_are_read_and_links_never_followed(tmp_path):
    secret = tmp_path / "admin_password.txt"
    secret.write_text("SECRET_KEY=hunter2")
    keep = tmp_path / "evaluator"
    _plant(keep, secret)
    files, _ = _collect(keep)
    assert set(files) == {
        "kernel.cu",
        "verdict.json",
        "compile.log",
        "kernel.sass",
        "submission-candidate-0123abcd.stdout.txt",
    }
    assert b"hunter2" not in b"".join(files.values())
    assert files["kernel.sass"].startswith(b"\t\tFunction : k\n        /*0000*/ HGMMA")


def test_a_link_in_place_of_a_trusted_file_is_refused_never_read(tmp_path):
    secret = tmp_path / "portal.sqlite3"
    secret.write_text("pbkdf2_sha256$password-hashes")
    keep = tmp_path / "evaluator"
    _plant(keep, secret)
    os.symlink(secret, keep / "logs" / "ncu-raw.csv")
    os.symlink(secret, keep / "logs" / "candidate-0123abcd.stderr")
    (keep / "build-trusted" / "kernel.sass").unlink()
    os.symlink("/dev/zero", keep / "build-trusted" / "kernel.sass")
    files, not_kept = _collect(keep)  # returns (no endless read of /dev/zero)
    assert all(b"pbkdf2" not in data for data in files.values())
    assert not {"kernel.sass", "ncu-raw.csv"} & set(files)
    assert not any(name.startswith("submission-") for name in files)  # the folder holds a link: none of it is read
    assert {"kernel.sass", "ncu-raw.csv", "logs"} <= {item.name for item in not_kept}


def test_a_trusted_folder_replaced_by_a_link_is_skipped(tmp_path):
    secret_dir = tmp_path / "data"
    secret_dir.mkdir()
    (secret_dir / "ncu-raw.csv").write_text("REDIS_URL=redis://:secret@host")
    (secret_dir / "candidate-0123abcd.stdout").write_text("REDIS_URL=redis://:secret@host")
    keep = tmp_path / "evaluator"
    keep.mkdir()
    os.symlink(secret_dir, keep / "logs")
    files, not_kept = _collect(keep)
    assert set(files) == {"kernel.cu", "verdict.json", "compile.log"}
    # Said on the page, without the worker's own folder names.
    assert {item.name for item in not_kept} >= {"logs"}
    assert not any(str(tmp_path) in item.reason for item in not_kept)
