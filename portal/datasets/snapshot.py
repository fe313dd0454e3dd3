"""The files of one public result snapshot, as bytes (no Django). Layout of a version folder:

README.md              dataset card; `configs:` names every config, so `datasets.load_dataset(folder, "ranked")`
                       works as is (an empty config: with `streaming=True`, see the card)
ranked/train.parquet   every measured kernel on a public board (zstd)
ranked/train.jsonl     the same rows
held/train.parquet     public evaluations held for review
held/train.jsonl
turns/train.parquet    the turns of public model runs
turns/train.jsonl
manifest.json          version, counts, evaluator versions, sha256 and size of every file above
"""

from __future__ import annotations

import json
from typing import Any

from portal.datasets.files import card_front_matter, jsonl_bytes, parquet_bytes, sha256_bytes
from portal.datasets.schemas import CONFIGS

# 4: an evaluation row carries `arch_rests_on_profile`. 3: a row's board section is `board_section`. 2: the
# measurements by the verdict's names (`speedup_factor`, `speedup_ci95_low`/`_high`, `fraction_of_peak`). Versions
# published in an earlier format are not rewritten: results-1 has version 1's names, results-1 and results-2 say
# `board_group`, and none before results-4 has the flag.
MANIFEST_FORMAT = "ptxbench-portal.results-4"

_DESCRIPTIONS = {
    "ranked": "every measured kernel on a public kernel board (both architectures, every task): the ranked "
    "(verified) ones with their `rank`, then the other correct ones by `board_section`, and the expert references",
    "held": "public evaluations held for an admin's review (a result far above the library or the GPU's peak); "
    "never on a board until confirmed",
    "turns": "every finished turn of public model runs: the kernel the model wrote, its verdict, its tokens",
}


def fingerprint(files: dict[str, bytes]) -> str:
    """Of the data files only (not the card or manifest, which name the version): equal rows, equal fingerprint."""
    data = {p: d for p, d in files.items() if p.endswith((".parquet", ".jsonl"))}
    return sha256_bytes("".join(f"{p} {sha256_bytes(d)}\n" for p, d in sorted(data.items())).encode())


def dataset_card(*, version: int, created_at: str, site_url: str, licence: str, counts: dict[str, int]) -> bytes:
    lines = card_front_matter(configs=list(CONFIGS), licence=licence, pretty_name=f"PTXBench results v{version}")
    lines += [
        "",
        f"# PTXBench results v{version}",
        "",
        f"Every public result of the PTXBench Portal at {json.dumps(site_url)}, built {created_at}. Schema: the",
        'portal\'s docs/api.md, "Public result datasets". Rows made up by the demo seed carry `synthetic: true`.',
        "",
        "| config | rows | what |",
        "| --- | --- | --- |",
        *(f"| `{name}` | {counts[name]} | {_DESCRIPTIONS[name]} |" for name in CONFIGS),
        "",
        "```python",
        "import datasets",
        'ranked = datasets.load_dataset("path/to/this/folder", "ranked", split="train")',
        "```",
        "",
        "Each config is also JSONL (`<config>/train.jsonl`, the same rows). `datasets` cannot materialise a split",
        "of 0 rows (huggingface/datasets#8401): load an empty config with `streaming=True`, or read its Parquet",
        "with pyarrow or pandas (an empty table with every column).",
        "",
    ]
    return "\n".join(lines).encode("utf-8")


def snapshot_files(
    *, version: int, created_at: str, site_url: str, licence: str, rows: dict[str, list[dict[str, Any]]]
) -> dict[str, bytes]:
    """Every file of a version by relative path, the manifest last (it lists the others' sha256)."""
    files: dict[str, bytes] = {}
    for name, schema in CONFIGS.items():
        files[f"{name}/train.parquet"] = parquet_bytes(rows[name], schema)
        files[f"{name}/train.jsonl"] = jsonl_bytes(rows[name])
    counts = {name: len(rows[name]) for name in CONFIGS}
    files["README.md"] = dataset_card(
        version=version, created_at=created_at, site_url=site_url, licence=licence, counts=counts
    )
    versions = sorted({r["evaluator_version"] for docs in rows.values() for r in docs if r.get("evaluator_version")})
    manifest = {
        "format": MANIFEST_FORMAT,
        "version": version,
        "created_at": created_at,
        "licence": licence,
        "counts": counts,
        "evaluator_versions": versions,
        "fingerprint": fingerprint(files),
        "files": {path: {"sha256": sha256_bytes(data), "bytes": len(data)} for path, data in sorted(files.items())},
    }
    files["manifest.json"] = json.dumps(manifest, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
    return files
