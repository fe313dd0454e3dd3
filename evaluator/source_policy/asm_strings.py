"""String literals as the assembler reads them, and the assembler directives the source policy refuses.

Host code reaches GNU as (gas) as text: `asm(...)` statements and asm labels, and also section names
(`__attribute__((section(...)))`) and `#ident` strings, which GCC copies into its assembly unescaped. gas reads
files at `.include`/`.incbin`, and its macro processor (`.macro`, `.irp`, `.rept`, `.altmacro`, `\\()`) can build
those directives from pieces. A rule over the source text is bypassed by anything the compiler decodes first
(`\\056include`, `\\x2eincbin`, `\\u002e`, out-of-range `\\x12e` masked to `.`, adjacent literals `".inc" "bin"`)
or by gas's own syntax (`nop; .incbin`, `lbl: .incbin`, `\\t.incbin`, `.inc/**/bin`: gas deletes block comments).

So: every string literal is decoded the way the C/C++ compiler does (`decode_literal`: escapes, UCNs, raw
strings, encoding prefixes), adjacent literals are joined (`literal_groups`), and the decoded text is split into
statements the way gas does (`gas_statements`). A group is refused when a statement starts with a directive of
`DIRECTIVES`; a group in an assembler context (inside `asm(...)`, `__attribute__((...))`, `[[...]]`, a `#pragma`
or `#ident` line) is also refused when such a directive appears anywhere in it, when it names `include` or
`incbin` at all, or when it holds a block comment. `evaluator/source_policy/policy.py` runs this on the raw source (after
line splicing and comment removal) and on the candidate's own lines of `nvcc -E` output (after macro expansion).

Device-code PTX (`.reg`, `.pred`, `{ }`, `wgmma.*`, `mbarrier.*`, labels, `@p bra`) has none of these
directives and passes.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from evaluator.both_sides.verdict import PolicyFinding
from evaluator.build.includes import translated_lines

# Why each directive is refused. Reading files: the point of the rule. Building text: gas's macro processor can
# assemble `.include` from pieces (`.irp d,inc` + `.\d\()lude`), so no directive check can see through it; no
# kernel needs it. `.mri` switches gas to MRI syntax, where pseudo-ops need no leading dot.
# Not refused, and why: `.fill`/`.space`/`.skip` (a big object is a C array too; the library size cap holds
# it), `.file`/`.linefile`/`.loc` (rename diagnostics only; gas prints no source lines), `.print`/`.error`
# (candidate text in the candidate's log), `.section`/`.symver`/`.weakref` (symbol names: the identifier rules
# read assembler text for dlopen or cuBLAS names).
FILE_READING = {
    "include": "it makes the assembler read a file",
    "incbin": "it copies a file into the object",
}
TEXT_BUILDING = {
    name: "assembler macros can build .include/.incbin from pieces"
    for name in ("macro", "purgem", "exitm", "mexit", "irp", "irpc", "irep", "irepc", "rept", "rep", "altmacro")
}
TEXT_BUILDING["mri"] = "MRI mode takes pseudo-ops without the leading dot"
DIRECTIVES = {**FILE_READING, **TEXT_BUILDING}

_ASM_KEYWORDS = {"asm", "__asm", "__asm__"}
_ASM_QUALIFIERS = {"volatile", "__volatile", "__volatile__", "inline", "__inline", "__inline__", "goto"}
_ATTRIBUTE_KEYWORDS = {"__attribute__", "__attribute", "__declspec"}
# Directive lines whose strings reach the assembler (#ident, #sccs, #pragma ident) or may (#pragma).
_ASM_DIRECTIVE_LINES = {"ident", "sccs", "pragma"}
# Directive lines whose quoted text is a file name with its own rule (evaluator/build/includes.py), not a literal.
_FILE_NAME_LINES = {"include", "include_next", "import", "embed", "line"}

_LITERALS_AND_TOKENS = r"""
    | (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s"]{0,16})\()
    | (?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
    | (?P<chr>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*')
    | (?P<num>\.?\d(?:[eEpP][+-]|'(?=\w)|[\w.])*)
    | (?P<word>[A-Za-z_$][\w$]*)
    | (?P<blank>[ \t\f\v\r]+|\n)
    | (?P<punct>.)
"""
_FLAGS = re.VERBOSE | re.DOTALL | re.MULTILINE
# In source text every line starting with `#` (after blanks) is a directive.
_TOKEN = re.compile(
    r"(?P<directive>^[ \t\f\v]*(?:\#|%:)[ \t\f\v]*(?P<name>[A-Za-z_]\w*|\d+)?[^\n]*)" + _LITERALS_AND_TOKENS, _FLAGS
)
# In `nvcc -E` output only a `#pragma`/`#ident` at column 0 is one: a `#` token from a macro expansion is printed
# after a blank, and is code (`[[x(# 1 "f")]]`), never to be skipped like a line marker.
_PREPROCESSED_TOKEN = re.compile(
    r"(?P<directive>^\#(?P<name>pragma|ident|sccs)\b[^\n]*)" + _LITERALS_AND_TOKENS, _FLAGS
)
_OPEN_PAREN = re.compile(r"\s*\(")
_DIRECTIVE_HEAD = re.compile(r"^[ \t\f\v]*(?:#|%:)[ \t\f\v]*(?:[A-Za-z_]\w*|\d+)?")
_LABELS = re.compile(r'^(?:\s*+(?:"(?:[^"\\]|\\.)*+"|[^\s:;"]++)\s*+:)*+\s*+')  # possessive: linear
_NAME = re.compile(r"\.([A-Za-z_][\w.$]*)")
_ANYWHERE = re.compile(r"\.\s*(" + "|".join(sorted(DIRECTIVES, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_NAMES_FILE_DIRECTIVE = re.compile(r"include|incbin", re.IGNORECASE)
_DELIMITED = re.compile(r"\\[oxuN]\{")
_BRACED = re.compile(r"\{([^}]*)\}")
_OCTAL = re.compile(r"[0-7]{1,3}")
_HEX = re.compile(r"[0-9A-Fa-f]+")
_UCN4 = re.compile(r"[0-9A-Fa-f]{4}")
_UCN8 = re.compile(r"[0-9A-Fa-f]{8}")
_SIMPLE_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
    "e": "\x1b", "E": "\x1b", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_QUOTE_CAP = 200
_SHOWN_CAP = 80


# --------------------------------------------------------------------------- decoding


def decode_literal(token: str, *, delimited: bool = True) -> str:
    """The value of one string literal token as the assembler gets it: one character per byte (a narrow or u8
    literal's UTF-8 bytes, read as Latin-1), or per code unit for a wide one. Escapes as GCC and EDG read
    them: simple ones and `\\e`; `\\ooo` and `\\xh...` masked to the character width (GCC and nvcc both compile
    `"\\x12e"` as `.`); `\\u`/`\\U`; an unknown escape keeps its character. `delimited`: read C++23's `\\o{}`,
    `\\x{}`, `\\u{}`, `\\N{}` (GCC 13); False reads them as an older front end does (`\\o` is `o`)."""
    m = re.match(r'(u8|u|U|L)?(R)?"', token)
    if m is None:
        return ""
    prefix = m.group(1) or ""
    wide = prefix in ("u", "U", "L")
    width = {"u": 0xFFFF, "U": 0xFFFFFFFF, "L": 0xFFFFFFFF}.get(prefix, 0xFF)
    if m.group(2):
        body = token[m.end() :]
        delim = body[: body.index("(")]
        text = body[len(delim) + 1 : len(body) - len(delim) - 2]
        return text if wide else _bytes_of(text)
    body = token[m.end() : -1] if token.endswith('"') and len(token) > m.end() else token[m.end() :]
    out: list[str] = []
    i, n = 0, len(body)

    def unit(value: int) -> str:
        value &= width
        return chr(value) if value < 0x110000 else "\ufffd"

    def character(cp: int) -> str:
        if not 0 <= cp < 0x110000 or 0xD800 <= cp < 0xE000:
            return "\ufffd"
        return chr(cp) if wide else _bytes_of(chr(cp))

    while i < n:
        slash = body.find("\\", i)
        if slash != i:  # plain text up to the next backslash, in one piece
            plain = body[i:] if slash < 0 else body[i:slash]
            out.append(plain if wide else _bytes_of(plain))
            i += len(plain)
            continue
        if i + 1 >= n:
            out.append("\\")
            break
        e = body[i + 1]
        braced = _BRACED.match(body, i + 2) if delimited and e in "oxuN" else None
        if braced:
            inner, i = braced.group(1), braced.end()
            try:
                if e == "N":
                    out.append(character(ord(unicodedata.lookup(inner))))
                elif e == "u":
                    out.append(character(int(inner, 16)))
                else:
                    out.append(unit(int(inner, 8 if e == "o" else 16)))
            except (KeyError, ValueError):
                out.append(inner)
        elif e in "01234567":
            octal = _OCTAL.match(body, i + 1)
            assert octal is not None, "the escape's first character is an octal digit"
            digits = octal.group(0)
            out.append(unit(int(digits, 8)))
            i += 1 + len(digits)
        elif e == "x" and (hex_digits := _HEX.match(body, i + 2)):
            digits = hex_digits.group(0)
            out.append(unit(int(digits, 16)))
            i += 2 + len(digits)
        elif e in "uU" and (_UCN4 if e == "u" else _UCN8).match(body, i + 2):
            size = 4 if e == "u" else 8
            out.append(character(int(body[i + 2 : i + 2 + size], 16)))
            i += 2 + size
        else:
            out.append(_SIMPLE_ESCAPES.get(e, e if wide else _bytes_of(e)))
            i += 2
    return "".join(out)


def _bytes_of(text: str) -> str:
    return text.encode("utf-8", errors="replace").decode("latin-1")


# --------------------------------------------------------------------------- lexing


@dataclass(frozen=True)
class LiteralGroup:
    """Adjacent string literals, joined as the compiler joins them."""

    tokens: tuple[str, ...]  # the literal tokens as written
    lines: tuple[int, ...]  # the line of each token
    assembler: bool  # inside asm(...), an attribute, or a #pragma/#ident line: text the assembler may read


def literal_groups(
    text: str, line_of: list[int], *, preprocessed: bool = False
) -> tuple[list[LiteralGroup], list[int]]:
    """The string literal groups of C/C++ `text` (comments already removed), with `line_of[i]` the source line
    of `text`'s line i; and the lines of `asm((...))` statements, whose text is computed (GCC 15 accepts a
    constant expression there). A directive line (outside literals) is read on its own and does not separate
    adjacent literals; the file name of an #include-like line is not a literal and has its own rule.
    `preprocessed`: `text` is `nvcc -E` output, where only column-0 `#pragma`/`#ident` lines are directives."""
    groups: list[LiteralGroup] = []
    computed: list[int] = []
    contexts: list[tuple[str, bool]] = []  # open brackets: (closer, whether it opened an assembler context)
    pending = ""  # "asm" or "attribute": the keyword seen, its "(" not yet
    previous = ""
    current: list[tuple[str, int, bool]] = []
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line(offset: int) -> int:
        index = bisect.bisect_left(newlines, offset)
        return line_of[min(index, len(line_of) - 1)]

    def close_group() -> None:
        if current:
            tokens, lines, flags = zip(*current, strict=True)
            groups.append(LiteralGroup(tokens, lines, any(flags)))
            current.clear()

    for kind, start, lexeme, m in _tokens(text, _PREPROCESSED_TOKEN if preprocessed else _TOKEN):
        if kind == "directive":
            name = m.group("name") or ""
            if name not in _FILE_NAME_LINES and not name.isdigit():
                here = line(start)
                inner, _ = literal_groups(_DIRECTIVE_HEAD.sub("", lexeme, count=1), [here])
                assembler = name in _ASM_DIRECTIVE_LINES
                groups += [LiteralGroup(g.tokens, g.lines, g.assembler or assembler) for g in inner]
            continue
        if kind in ("raw", "str"):
            current.append((lexeme, line(start), any(a for _, a in contexts)))
            previous, pending = lexeme, ""
            continue
        close_group()
        if kind == "word" and lexeme in _ASM_KEYWORDS:
            pending = "asm"
        elif kind == "word" and lexeme in _ATTRIBUTE_KEYWORDS:
            pending = "attribute"
        elif kind == "word" and lexeme in _ASM_QUALIFIERS and pending == "asm":
            pass
        elif lexeme in ("(", "["):
            if pending == "asm" and lexeme == "(" and _OPEN_PAREN.match(text, start + 1):
                computed.append(line(start))
            contexts.append(("]" if lexeme == "[" else ")", bool(pending) or (lexeme == "[" and previous == "[")))
            pending = ""
        elif lexeme in (")", "]"):
            while contexts and contexts.pop()[0] != lexeme:
                pass
            pending = ""
        else:
            pending = ""
        previous = lexeme
    close_group()
    return groups, computed


def _tokens(text: str, pattern: re.Pattern[str], pos: int = 0) -> Iterable[tuple[str, int, str, re.Match[str]]]:
    """(kind, start, text, match) of each token but blanks. A raw string runs from its opening to its
    terminator, or to the end of `text` when it has none (found with one `find`: linear, however many)."""
    n = len(text)
    while pos < n:
        m = pattern.match(text, pos)
        assert m is not None, "the token pattern matches any character"
        kind, start = m.lastgroup or "punct", m.start()
        pos = m.end()
        if kind == "raw":
            terminator = ")" + m.group("delim") + '"'
            end = text.find(terminator, pos)
            pos = n if end < 0 else end + len(terminator)
        if kind != "blank":
            yield kind, start, text[start:pos], m


# --------------------------------------------------------------------------- gas


def gas_statements(text: str) -> list[str]:
    """`text` cut where gas ends a statement (newline, `;`, also CR/FF/VT/NUL to be safe), each statement with
    its leading blanks and labels (`x:`, `1:`, `"quoted":`, several) removed: what is left starts with the
    directive or instruction gas will read."""
    return [_LABELS.sub("", part, count=1) for part in re.split(r"[\n\r\f\v;\x00]", text)]


def gas_views(text: str) -> list[str]:
    """The readings of `text` to check: as written; with every block comment deleted, ignoring gas strings; and
    as gas's input scrubber reads it, with and without its x86 rules for `'c` character constants and `#` line
    comments. gas deletes `/* */` outside its strings, so `.inc/**/bin` is `.incbin`; which `/*` opens a comment
    depends on its strings, character constants and comments, hence several readings (one for any of them)."""
    views = [
        text,
        re.sub(r"/\*.*?(?:\*/|\Z)", "", text, flags=re.DOTALL),
        _scrub(text, x86=True),
        _scrub(text, x86=False),
    ]
    return list(dict.fromkeys(views))


def _scrub(text: str, *, x86: bool) -> str:
    out: list[str] = []
    for m in (_SCRUB_X86 if x86 else _SCRUB).finditer(text):
        kind = m.lastgroup
        if kind == "char":  # 'c, '\c, with an optional closing quote: a number to gas
            out.append(" 0 ")
        elif kind not in ("comment", "line_comment"):
            out.append(m.group(0))
    return "".join(out)


# gas's input scrubber, as regular expressions: strings (with the x86 rules ending at a newline, as gas warns
# and does), block comments deleted, and with the x86 rules `'c` character constants and `#` line comments.
_SCRUB = re.compile(r'(?P<string>"(?:[^"\\]|\\.)*+"?)|(?P<comment>/\*.*?(?:\*/|\Z))|(?P<text>[^"/]+|.)', re.DOTALL)
_SCRUB_X86 = re.compile(
    r'(?P<string>"(?:[^"\\\n]|\\[^\n])*+"?)|(?P<comment>/\*.*?(?:\*/|\Z))|(?P<char>\'(?:\\.|.)\'?)'
    r"|(?P<line_comment>\#[^\n]*)|(?P<text>[^\"/'#]+|.)",
    re.DOTALL,
)


@dataclass(frozen=True)
class AssemblerHit:
    """One refused piece of decoded assembler text."""

    rule: str  # "include-path" (reads a file) or "assembler-directive"
    message: str
    line: int


def group_hits(group: LiteralGroup) -> list[AssemblerHit]:
    """What the assembler rule refuses in one group of adjacent literals (both readings of delimited escapes)."""
    decodings = ["".join(decode_literal(t) for t in group.tokens)]
    if any(_DELIMITED.search(t) for t in group.tokens):
        decodings.append("".join(decode_literal(t, delimited=False) for t in group.tokens))
    hits: dict[tuple[str, str], AssemblerHit] = {}

    def add(name: str, shown: str) -> None:
        rule = "include-path" if name.removeprefix("names ") in FILE_READING else "assembler-directive"
        if (rule, name) in hits:
            return  # one finding per directive and group (a repeated one costs nothing more)
        reason = DIRECTIVES.get(name, "")
        if name in DIRECTIVES:
            message = f"assembler .{name} is not allowed ({reason})"
        elif name == "comment":
            message = "a /* comment in assembler text is not allowed (gas deletes it, joining the text around it)"
        else:
            word = name.removeprefix("names ")
            message = f"assembler text may not name '{word}' (.include/.incbin read files, and macros can rebuild them)"
        message += f"; the string as the compiler decodes it: {_shown(shown)}"
        hits[(rule, name)] = AssemblerHit(rule, message, _line_of_hit(group, shown))

    for decoded in decodings:
        for view in gas_views(decoded):
            for statement in gas_statements(view):
                m = _NAME.match(statement)
                if m and m.group(1).lower() in DIRECTIVES:
                    add(m.group(1).lower(), statement)
            if not group.assembler:
                continue
            for m in _ANYWHERE.finditer(view):
                add(m.group(1).lower(), _around(view, m.start()))
            for m in _NAMES_FILE_DIRECTIVE.finditer(view):
                add("names " + m.group(0).lower(), _around(view, m.start()))
        if group.assembler and "/*" in decoded:
            add("comment", _around(decoded, decoded.index("/*")))
    # A directive found says more than the bare name: report the name only where no directive was found.
    named = {name for _, name in hits}
    return [hit for (_, name), hit in hits.items() if name.removeprefix("names ") not in named or name in DIRECTIVES]


def assembler_texts(groups: Iterable[LiteralGroup]) -> list[tuple[int, str]]:
    """(line, decoded text) of each group the assembler may read, for the identifier rules (dlopen, cuBLAS)."""
    return [(g.lines[0], "".join(decode_literal(t) for t in g.tokens)) for g in groups if g.assembler]


def _line_of_hit(group: LiteralGroup, shown: str) -> int:
    # The literal whose own decoded text holds the start of the offending statement, else the group's first.
    probe = shown.strip()[:8]
    for token, line in zip(group.tokens, group.lines, strict=True):
        if probe and probe in decode_literal(token):
            return line
    return group.lines[0]


def _around(text: str, at: int) -> str:
    # The line around `at`, at most 20 characters before it and _SHOWN_CAP after (searches bounded: linear).
    start = max(text.rfind("\n", max(0, at - 20), at) + 1, at - 20, 0)
    end = text.find("\n", at, at + _SHOWN_CAP)
    return text[start : end if end >= 0 else at + _SHOWN_CAP]


def _shown(text: str) -> str:
    text = text.strip(" ")
    shown = text.encode("unicode_escape").decode("ascii")
    return "'" + (shown if len(shown) <= _SHOWN_CAP else shown[: _SHOWN_CAP - 1] + "…") + "'"


# --------------------------------------------------------------------------- policy entry points


def source_groups(source: str) -> tuple[list[LiteralGroup], list[int]]:
    """Literal groups of the raw source, read after line splicing and with comments replaced by a space."""
    lines = translated_lines(source)
    return literal_groups("\n".join(code for _, code, _ in lines), [n for n, _, _ in lines] or [1])


def own_groups(own_lines: list[tuple[int, str]]) -> tuple[list[LiteralGroup], list[int]]:
    """Literal groups of the candidate's own lines of `nvcc -E` output (no comments there)."""
    return literal_groups("\n".join(t for _, t in own_lines), [n for n, _ in own_lines] or [1], preprocessed=True)


def findings(
    groups: list[LiteralGroup], computed: list[int], quote: Callable[[int], str], *, suffix: str = ""
) -> list[PolicyFinding]:
    """Policy findings for the assembler rule; `quote` gives the text shown for a line."""
    out: list[PolicyFinding] = []
    seen: set[tuple[str, int, str]] = set()
    for group in groups:
        for hit in group_hits(group):
            key = (hit.rule, hit.line, hit.message.split(";")[0])
            if key not in seen:
                seen.add(key)
                out.append(
                    PolicyFinding(
                        hit.rule,
                        hit.message.replace(";", suffix + ";", 1),
                        hit.line,
                        cap_quote(quote(hit.line)),
                    )
                )
    for line in computed:
        message = "asm with a computed string is not allowed (its text must be string literals)" + suffix
        out.append(PolicyFinding("assembler-directive", message, line, cap_quote(quote(line))))
    return out


def open_raw_string(line: str, pending_end: str | None) -> str | None:
    """The terminator (`)delim"`) of a raw string literal still open at the end of `line`, None when none is;
    `pending_end`: the terminator of one open when the line began."""
    at = 0
    if pending_end is not None:
        end = line.find(pending_end)
        if end < 0:
            return pending_end
        at = end + len(pending_end)
    for kind, _start, lexeme, m in _tokens(line, _TOKEN, at):
        if kind == "raw" and not lexeme.endswith(")" + m.group("delim") + '"'):
            return ")" + m.group("delim") + '"'
    return None


def cap_quote(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _QUOTE_CAP else text[: _QUOTE_CAP - 1] + "…"
