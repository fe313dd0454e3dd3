"""Audit downloads: zip bundles with a MANIFEST.json of sha256 sums, and FlashInfer Trace JSONL. Pure builders over
bytes and verdicts; `selectors.py` fetches the rows and `views.py` wraps the responses."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evaluator.verdict import Verdict
from portal.leaderboard.attachments import sha256_hex

MANIFEST_NAME = "MANIFEST.json"
# The version of a bundle's names (MANIFEST.json `format`, and `format` of a run's trajectories.json): 2 since issue 30,
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


@dataclass(frozen=True)
class BundleFile:
    path: str  # inside the zip
    data: bytes


def build_bundle(files: Iterable[BundleFile], *, meta: dict[str, Any]) -> bytes:
    """A zip of `files` plus MANIFEST.json: {format, meta..., "files": [{path, sha256, size}]}. Deterministic
    timestamps, so the same evidence always gives the same archive."""
    buffer = io.BytesIO()
    entries = []
    stamp = (1980, 1, 1, 0, 0, 0)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for item in files:
            archive.writestr(zipfile.ZipInfo(item.path, date_time=stamp), item.data, zipfile.ZIP_DEFLATED)
            entries.append({"path": item.path, "sha256": sha256_hex(item.data), "size": len(item.data)})
        manifest = {"format": BUNDLE_FORMAT, **meta, "files": entries}
        archive.writestr(
            zipfile.ZipInfo(MANIFEST_NAME, date_time=stamp),
            json.dumps(manifest, indent=2, sort_keys=True, default=str).encode(),
            zipfile.ZIP_DEFLATED,
        )
    return buffer.getvalue()


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
