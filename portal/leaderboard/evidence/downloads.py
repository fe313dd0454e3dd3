"""Audit downloads: zip bundles with a MANIFEST.json of sha256 sums, and FlashInfer Trace JSONL. Builders over bytes,
stored files and verdicts; `selectors.py` fetches the rows and `views.py` wraps the responses. A bundle is written
to a temporary file a block at a time and streamed from there, so its size never becomes a web worker's memory."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from evaluator.both_sides.verdict import Verdict
from portal.leaderboard.attachments import sha256_hex
from portal.submissions.csv_cells import UnreadableCsv, neutralise

MANIFEST_NAME = "MANIFEST.json"
# The version of a bundle's names (MANIFEST.json `format`, and `format` of a run's trajectories.json): 2,
# the measurements by the verdict's names (`speedup_factor`, `speedup_ci95_low`/`_high`, `fraction_of_peak`, a turn's
# `speedup_factor`). Bundles built before carry no `format` (version 1: portal/core/serializers.py V1_NAMES).
BUNDLE_FORMAT = "ptxbench-portal.bundle-2"


class ChecksumMismatch(Exception):
    """A stored file no longer matches the sha256 recorded when it was written: never serve it."""


def checked(data: bytes, expected: str, what: str) -> bytes:
    actual = sha256_hex(data)
    if actual != expected:
        raise ChecksumMismatch(f"{what}: stored sha256 {expected}, file on disk has {actual}")
    return data


# --------------------------------------------------------------------------- bundles

BLOCK = 256 * 1024  # bytes read, hashed, compressed and sent at a time: a bundle never sits in memory whole


@dataclass(frozen=True)
class BundleFile:
    """A file made in memory for the bundle (traces, trajectories: small)."""

    path: str  # inside the zip
    data: bytes
    origin: str = ""  # who wrote the bytes (an Artifact.Origin value), listed in the manifest


@dataclass(frozen=True)
class StoredFile:
    """A stored artifact, read from disk in blocks and checked against its recorded sha256 on the way."""

    path: str  # inside the zip
    location: Path
    sha256: str  # recorded when it was stored
    size: int
    origin: str
    csv: bool = False  # served with formula-like cells neutralised (portal/submissions/csv_cells.py)


@dataclass
class Bundle:
    """A finished zip in an anonymous temporary file (gone once closed), with its size and sha256."""

    file: BinaryIO
    size: int
    sha256: str


def build_bundle(files: Iterable[BundleFile | StoredFile], *, meta: dict[str, Any]) -> Bundle:
    """A zip of `files` plus MANIFEST.json: {format, meta..., "files": [{path, sha256, size, origin}]}, written to a
    temporary file block by block. Deterministic timestamps, so the same evidence always gives the same archive.
    A stored file that no longer matches its sha256 raises ChecksumMismatch (the temporary file is dropped)."""
    out = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the response that streams it, or below)
    try:
        entries = []
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for item in files:
                digest, size = _write_entry(archive, item)
                entries.append({"path": item.path, "sha256": digest, "size": size, "origin": item.origin})
            manifest = {"format": BUNDLE_FORMAT, **meta, "files": entries}
            data = json.dumps(manifest, indent=2, sort_keys=True, default=str).encode()
            archive.writestr(_entry(MANIFEST_NAME), data, zipfile.ZIP_DEFLATED)
        size, digest = _size_and_sha256(out)
    except BaseException:
        out.close()
        raise
    return Bundle(out, size, digest)


def _entry(path: str, size: int = 0) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.file_size = size  # lets zipfile choose ZIP64 up front for a large file
    return info


def _write_entry(archive: zipfile.ZipFile, item: BundleFile | StoredFile) -> tuple[str, int]:
    if isinstance(item, BundleFile):
        archive.writestr(_entry(item.path), item.data, zipfile.ZIP_DEFLATED)
        return sha256_hex(item.data), len(item.data)
    if item.csv:
        data = served_csv(checked(item.location.read_bytes(), item.sha256, item.path))
        archive.writestr(_entry(item.path), data, zipfile.ZIP_DEFLATED)
        return sha256_hex(data), len(data)
    stored = hashlib.sha256()
    with item.location.open("rb") as source, archive.open(_entry(item.path, item.size), "w") as sink:
        while block := source.read(BLOCK):
            stored.update(block)
            sink.write(block)
    if stored.hexdigest() != item.sha256:
        raise ChecksumMismatch(f"{item.path}: stored sha256 {item.sha256}, file on disk has {stored.hexdigest()}")
    return item.sha256, item.size


def _size_and_sha256(file: BinaryIO) -> tuple[int, str]:
    file.seek(0)
    h, size = hashlib.sha256(), 0
    while block := file.read(BLOCK):
        h.update(block)
        size += len(block)
    file.seek(0)
    return size, h.hexdigest()


def served_csv(data: bytes) -> bytes:
    """A CSV as it leaves the portal: no cell a spreadsheet would run (a file that is not CSV goes out as empty
    text rather than as a spreadsheet's input)."""
    try:
        return neutralise(data)
    except UnreadableCsv:
        return b""


def environment_of(verdict: Verdict | None) -> dict[str, Any]:
    """The verdict's environment record as plain data (empty without one)."""
    env = verdict.environment if verdict is not None else None
    return dataclasses.asdict(env) if env is not None else {}


# --------------------------------------------------------------------------- FlashInfer Trace


def trace_lines(
    *,
    definition: str,
    solution: str,
    verdict: Verdict | None,
    workloads: dict[str, dict[str, Any]],
    is_synthetic: bool = False,
) -> list[dict[str, Any]]:
    """One FlashInfer Trace record per workload result of a verdict. `workloads` maps workload uuid to its
    catalog entry ({"axes", "inputs"}), since verdicts keep only the axes. `is_synthetic` (a made-up row of the
    demo seed) is on every record, as in every other export."""
    if verdict is None:
        return []
    env = verdict.environment
    libs = {
        name: getattr(env, key)
        for name, key in (("cuda", "cuda_runtime"), ("torch", "torch_version"), ("nvcc", "nvcc_version"))
        if env is not None and getattr(env, key)
    }
    libs.update({"driver": env.driver_version} if env is not None and env.driver_version else {})
    environment = {"hardware": (env.gpu_name if env is not None else None) or "", "libs": libs}
    lines = []
    for result in verdict.workloads or []:
        known = workloads.get(str(result.uuid)) or {}
        correctness = result.correctness
        performance = result.performance
        lines.append(
            {
                "definition": definition,
                "workload": {
                    "uuid": result.uuid,
                    "axes": result.axes or known.get("axes") or {},
                    "inputs": known.get("inputs") or {},
                },
                "solution": solution,
                "is_synthetic": is_synthetic,
                "evaluation": {
                    "status": result.status.value,
                    "log": (result.message or "")[:2000],
                    "environment": environment,
                    "timestamp": verdict.created_at,
                    "correctness": {
                        "max_absolute_error": correctness.max_absolute_error,
                        "max_relative_error": correctness.max_relative_error,
                    }
                    if correctness is not None
                    else None,
                    "performance": {
                        "latency_ms": performance.latency_ms,
                        "reference_latency_ms": performance.baseline_latency_ms,  # FlashInfer Trace's name for the baseline
                        "speedup_factor": performance.speedup_factor,
                    }
                    if performance is not None
                    else None,
                },
            }
        )
    return lines


def to_jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in records).encode("utf-8")
