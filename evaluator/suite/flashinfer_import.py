"""Reading a FlashInfer-Trace data set (definitions/**/*.json, workloads/**/<name>.jsonl) without PTXBench extras."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluator.both_sides.taskdata import (
    Definition,
    TaskDataError,
    Workload,
    parse_definition,
    parse_workloads,
    read_json,
)


@dataclass(frozen=True)
class ImportedDefinition:
    """A definition and its workloads read from a FlashInfer-Trace data set (no PTXBench extras)."""

    definition: Definition
    workloads: tuple[Workload, ...]
    path: str


def load_flashinfer_dir(root: Path) -> list[ImportedDefinition]:
    """Read a FlashInfer-Trace style data set: definitions/**/*.json and workloads/**/<name>.jsonl."""
    root = Path(root)
    def_root = root / "definitions"
    if not def_root.is_dir():
        raise TaskDataError(root, "definitions/", "folder is missing")
    workload_files: dict[str, Path] = {}
    wl_root = root / "workloads"
    if wl_root.is_dir():
        for p in sorted(wl_root.rglob("*.jsonl")):
            workload_files[p.stem] = p
    result = []
    for path in sorted(def_root.rglob("*.json")):
        definition = parse_definition(read_json(path), path)
        workloads: tuple[Workload, ...] = ()
        wl = workload_files.get(definition.name)
        if wl is not None:
            workloads = parse_workloads(wl.read_text(encoding="utf-8"), definition, wl)
        result.append(ImportedDefinition(definition, workloads, str(path)))
    names = [r.definition.name for r in result]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise TaskDataError(def_root, "name", f"duplicate definition names {sorted(dupes)}")
    return result
