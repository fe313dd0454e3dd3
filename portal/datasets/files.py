"""Dataset files as bytes, for Hugging Face `datasets` (no Django): shared by the public result snapshots
(portal/datasets) and Fixit's exports (portal/fixit/exports.py).

- JSONL: one JSON document a line, UTF-8.
- Parquet (zstd) with an explicit Arrow schema: the columns and their types are the same whatever the rows, and a
  file of 0 rows is the schema alone (no row group: `datasets` refuses a row group of 0 rows with "BatchSize must
  be greater than 0"; pyarrow and pandas read it as an empty table with its columns).
- The dataset card's YAML front matter: `configs:` naming each config's files, every free value JSON-quoted so a
  hostile name cannot add YAML keys."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def jsonl_bytes(documents: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(d, ensure_ascii=False, sort_keys=False).encode("utf-8") + b"\n" for d in documents)


def parquet_bytes(documents: list[dict[str, Any]], schema: pa.Schema) -> bytes:
    """The rows as zstd Parquet of exactly this schema; with no rows, the schema alone."""
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, schema, compression="zstd") as writer:
        if documents:
            writer.write_table(pa.Table.from_pylist(documents, schema=schema))
    return buffer.getvalue()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def card_front_matter(
    *, configs: list[str], licence: str, pretty_name: str, path: str = "{config}/train.parquet"
) -> list[str]:
    """The YAML header of README.md: `datasets.load_dataset(folder, config)` finds each config's train split
    under `path`. Config names are the caller's constants; licence and name are JSON-quoted."""
    lines = ["---", f"license: {json.dumps(licence)}", f"pretty_name: {json.dumps(pretty_name)}"]
    if configs:
        lines.append("configs:")
    for config in configs:
        lines += [
            f"- config_name: {config}",
            "  data_files:",
            "  - split: train",
            f"    path: {path.format(config=config)}",
        ]
    lines.append("---")
    return lines
