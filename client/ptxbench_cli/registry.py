"""What the portal evaluates (GET /api/v2/registry): its architectures and kernel languages. The client keeps no
list of its own, so a portal that adds an architecture or a language needs no new client. A portal from before
the endpoint answers 404: then nothing is checked here and the portal's own answer says what it refuses."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ptxbench_cli.api import API, ApiError, Client, CliError
from ptxbench_cli.text import one_line

PATH = f"{API}/registry"


@dataclass(frozen=True)
class Registry:
    arches: tuple[str, ...] | None  # None: the portal does not say (no endpoint)
    suffixes: dict[str, str] | None  # a file suffix (".cu") -> its language's name; None as above

    @property
    def languages(self) -> tuple[str, ...] | None:
        return None if self.suffixes is None else tuple(dict.fromkeys(self.suffixes.values()))

    def check_arch(self, arch: str | None) -> None:
        """Refuse (exit 2) an architecture the portal does not list; anything goes when it lists none."""
        if arch is not None and self.arches is not None and arch not in self.arches:
            raise CliError(f"unknown architecture {arch!r}; this portal has: {', '.join(self.arches)}", 2)

    def check_language(self, language: str | None) -> None:
        known = self.languages
        if language is not None and known is not None and language not in known:
            raise CliError(f"unknown language {language!r}; this portal has: {', '.join(known)}", 2)

    def language_of(self, path: Path) -> str | None:
        """The language a file's suffix says; None when the portal lists none (it then tells by the file's name)."""
        if self.suffixes is None:
            return None
        language = self.suffixes.get(path.suffix.lower())
        if language is None:
            known = ", ".join(f"{s} is {name}" for s, name in self.suffixes.items())
            raise CliError(f"cannot tell the language of {path.name} ({known}): pass --language", 2)
        return language


def _names(entries: object, key: str) -> list[dict[str, str]] | None:
    """The entries that carry text under `name` (and `key`), each field cut to one printable line; None when the
    answer holds no list (nothing is checked then: the portal refuses what it does not know in any case)."""
    if not isinstance(entries, list):
        return None
    found = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get(key), str):
            found.append({"name": one_line(entry["name"], 40), key: one_line(entry[key], 40)})
    return found


def fetch(client: Client) -> Registry:
    try:
        body = client.get_json(PATH)
    except ApiError as exc:
        if exc.status != 404:
            raise
        sys.stderr.write(
            "ptxbench: note: this portal does not list its architectures and languages; not checked here\n"
        )
        return Registry(None, None)
    if not isinstance(body, dict):
        raise CliError("the portal's registry is not what this client reads (expected a JSON object)")
    arches = _names(body.get("arches"), "name")
    languages = _names(body.get("languages"), "suffix")
    return Registry(
        None if arches is None else tuple(e["name"] for e in arches),
        None if languages is None else {s.lower(): e["name"] for e in languages for s in suffixes_of(e)},
    )


def suffixes_of(entry: dict) -> list[str]:
    """Every suffix a language's files may have (`suffixes`), or its one `suffix` from a portal that lists only it."""
    listed = entry.get("suffixes")
    if isinstance(listed, list) and all(isinstance(s, str) for s in listed):
        return listed
    return [entry["suffix"]]
