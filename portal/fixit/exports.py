"""Dataset files from rows, as bytes (no Django): JSONL in chat-message form, Parquet laid out for Hugging Face
`datasets`, a dataset card whose YAML header names the two configs, and the manifest.

Layout (one folder per dataset version):

    README.md                  dataset card; `configs:` lets `datasets.load_dataset(folder, "repair")` work as is
                               (it names the configs that have rows: `datasets` cannot load an empty split)
    repair/train.jsonl         five-message repair rows
    repair/train.parquet       the same rows
    generation/train.jsonl     three-message generation rows
    generation/train.parquet   the same rows
    manifest.json              filters, counts, sha256 and size of every file above, versions, licence
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pyarrow as pa

# The file helpers shared with the public result snapshots (one home: portal/datasets/files.py).
from portal.datasets.files import card_front_matter, jsonl_bytes, sha256_bytes
from portal.datasets.files import parquet_bytes as _parquet_bytes

# 2: the fixed (or correct) kernel's `speedup_factor`, the verdict's name (it was `speedup` in
# version 1; files already published keep theirs, read back through portal/core/serializers.py `canonical_names`).
MANIFEST_FORMAT = "ptxbench-portal.fixit-2"
_MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string()), ("loss", pa.bool_())]))
REPAIR_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("messages", _MESSAGES),
        ("run", pa.int64()),
        ("trajectory", pa.int64()),
        ("model", pa.string()),
        ("arch", pa.string()),
        ("task", pa.string()),
        ("failed_turn", pa.int64()),
        ("fixed_turn", pa.int64()),
        ("failed_status", pa.string()),
        ("failed_evaluation", pa.string()),
        ("fixed_evaluation", pa.string()),
        ("arch_status", pa.string()),
        ("speedup_factor", pa.float64()),
        ("failed_evaluator_version", pa.string()),
        ("evaluator_version", pa.string()),
        ("wrong_sha256", pa.string()),
        ("fixed_sha256", pa.string()),
        ("reasoning_by", pa.string()),
        ("source", pa.string()),
        ("repair_run", pa.int64()),
        ("teacher", pa.string()),
    ]
)
GENERATION_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("messages", _MESSAGES),
        ("run", pa.int64()),
        ("trajectory", pa.int64()),
        ("model", pa.string()),
        ("arch", pa.string()),
        ("task", pa.string()),
        ("turn", pa.int64()),
        ("evaluation", pa.string()),
        ("arch_status", pa.string()),
        ("speedup_factor", pa.float64()),
        ("evaluator_version", pa.string()),
        ("kernel_sha256", pa.string()),
    ]
)
SCHEMAS = {"repair": REPAIR_SCHEMA, "generation": GENERATION_SCHEMA}


def parquet_bytes(documents: list[dict[str, Any]], kind: str) -> bytes:
    """The rows as Parquet; with no rows, the schema alone (no row group: `datasets` refuses a row group of 0 rows
    with "BatchSize must be greater than 0", pyarrow and pandas read the file as an empty table)."""
    return _parquet_bytes(documents, SCHEMAS[kind])


def loadable_configs(counts_doc: dict[str, Any]) -> list[str]:
    """The configs the card names: those with rows. Hugging Face `datasets` cannot load a split of 0 rows
    ("corresponds to no data", huggingface/datasets#8401), so an empty config is left out of the card (its files
    stay, schema only) and the dataset's page says it is empty."""
    return [kind for kind in SCHEMAS if counts_doc[kind]["rows"]]


def counts(documents: list[dict[str, Any]], status_key: str | None) -> dict[str, Any]:
    """Rows per task, per arch and (repairs) per failing status."""
    result: dict[str, Any] = {
        "rows": len(documents),
        "by_task": dict(sorted(Counter(d["task"] for d in documents).items())),
        "by_arch": dict(sorted(Counter(d["arch"] for d in documents).items())),
    }
    if status_key:
        result["by_status"] = dict(sorted(Counter(d[status_key] for d in documents).items()))
    return result


def dataset_card(*, name: str, version: int, licence: str, attribution: str, counts_doc: dict[str, Any]) -> bytes:
    """README.md with the YAML header `datasets` reads (configs and their files); every value JSON-quoted, so a
    hostile name or attribution cannot add YAML keys."""
    configs = loadable_configs(counts_doc)
    lines = card_front_matter(configs=configs, licence=licence, pretty_name=f"{name} v{version}")
    lines += [
        "",
        f"# {name} v{version}",
        "",
        "Fixit repair data exported by PTXBench Portal (docs/fixit.md). `repair`: five messages (system, task,",
        "wrong kernel, error log, then the fixed kernel; only the last carries the loss). `generation`: three",
        "messages (system, task, a correct kernel). Every row names its run, turns, evaluations and evaluator.",
        "",
        f"- repair rows: {counts_doc['repair']['rows']}",
        f"- generation rows: {counts_doc['generation']['rows']}",
        f"- attribution: {json.dumps(attribution)}",
        "",
    ]
    empty = [kind for kind in SCHEMAS if kind not in configs]
    if empty:
        lines += [
            f"Empty: {', '.join(empty)} (no rows). Its files hold the schema only and this card names no such "
            "config: `datasets` cannot load a split of 0 rows.",
            "",
        ]
    return "\n".join(lines).encode("utf-8")


def dataset_files(
    *,
    name: str,
    version: int,
    repair: list[dict[str, Any]],
    generation: list[dict[str, Any]],
    manifest_fields: dict[str, Any],
) -> dict[str, bytes]:
    """Every file of a dataset version by relative path, the manifest last (it lists the others' sha256)."""
    counts_doc = {"repair": counts(repair, "failed_status"), "generation": counts(generation, None)}
    files = {
        "repair/train.jsonl": jsonl_bytes(repair),
        "repair/train.parquet": parquet_bytes(repair, "repair"),
        "generation/train.jsonl": jsonl_bytes(generation),
        "generation/train.parquet": parquet_bytes(generation, "generation"),
    }
    files["README.md"] = dataset_card(
        name=name,
        version=version,
        licence=manifest_fields.get("licence", ""),
        attribution=manifest_fields.get("attribution", ""),
        counts_doc=counts_doc,
    )
    versions = sorted({d["evaluator_version"] for d in repair + generation if d.get("evaluator_version")})
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": name,
        "version": version,
        **manifest_fields,
        "counts": counts_doc,
        "evaluator_versions": versions,
        "files": {path: {"sha256": sha256_bytes(data), "bytes": len(data)} for path, data in sorted(files.items())},
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
    return files
