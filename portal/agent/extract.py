"""Pure: the kernel a model reply contains — the last fenced code block that looks like a kernel file of the
run's language (which info strings and markers make one is the languages registry's `Prompting`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from evaluator.languages import DEFAULT_LANGUAGE
from evaluator.languages import language as registered_language

# ``` or ~~~ fences (3 or more), optional info string; the closing fence must use the same character and be
# at least as long, per CommonMark.
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
# Reasoning a server leaves inline; code drafted while thinking is not the answer.
_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class CodeBlock:
    language: str
    code: str
    closed: bool  # False when the reply ended inside the block (e.g. cut off at the token limit)


@dataclass(frozen=True)
class Extraction:
    kernel: str  # "" when no block looks like a kernel
    blocks: int  # fenced blocks seen
    truncated: bool  # the reply ends inside a code block that would have been the kernel


def code_blocks(text: str) -> list[CodeBlock]:
    blocks: list[CodeBlock] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence = match.group("fence")
        language = (match.group("info").split() or [""])[0].lower()
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                closed = True
                i += 1
                break
            body.append(lines[i])
            i += 1
        blocks.append(CodeBlock(language, "\n".join(body).strip("\n") + "\n", closed))
    return blocks


def looks_like_kernel(block: CodeBlock, language: str = DEFAULT_LANGUAGE.name) -> bool:
    """Whether the block may be a kernel file of that registered language (never, for one models are not asked
    to write)."""
    prompting = registered_language(language).prompting
    return prompting is not None and prompting.looks_like_kernel(block.language, block.code)


def extract_kernel(reply: str, language: str = DEFAULT_LANGUAGE.name) -> Extraction:
    visible = _THINK.sub("", reply or "")
    blocks = code_blocks(visible)
    candidates = [b for b in blocks if looks_like_kernel(b, language)]
    closed = [b for b in candidates if b.closed]
    truncated = bool(candidates) and not candidates[-1].closed
    if not closed:
        return Extraction("", len(blocks), truncated)
    return Extraction(closed[-1].code, len(blocks), truncated)
