"""Which files the compiler may read, and keeping every other file out of the published compile log.

Three layers, because the compile log is public:
1. `directive_findings` (part of the source policy): every preprocessor directive is read the way the
   preprocessor reads it — after line splicing (backslash-newline, also with blanks before the newline as GCC
   accepts), with comments replaced by a space, with the `%:` digraph — and every form that names a file is
   checked: `#include` (a relative path inside the include path only), `#include_next`, `#import`, `#embed`,
   `#line`/GNU line markers with a file name or a macro operand, which can expand to one (GCC prints the named
   file's lines under its diagnostics, and the lines after it are no longer the candidate's in `-E` output),
   `#pragma GCC dependency` and its `_Pragma` form, `__has_include`/`__has_include_next`/`__has_embed`
   (assembler `.include`/`.incbin` in string literals: evaluator/source_policy/asm_strings.py). Trigraphs (`??=include`) are ignored by nvcc's front
   ends in C++17 mode (GCC warns "trigraph ??= ignored", cudafe++ "support for trigraphs is disabled"); a
   line starting with `??=` is refused anyway so that a flag change cannot open that door.
2. `outside_roots`: nvcc writes the files it actually opened (`-MD -MF`, both the host and device passes);
   any one outside the compiler's own include search list (`include_roots`: the toolkit, the host compiler's
   headers, tvm-ffi) or the candidate's build folder rejects the kernel and the compile log is withheld.
3. `redact_output`: diagnostics located in, or naming, a file outside the quotable roots are cut from the
   compiler output before it is recorded (defence in depth for what dependency output does not list: a
   `#line` file name, an assembler `.include`).
The compile sandbox (evaluator/isolation/jail.py, `toolchain=True`) is the containment under all three: it shows no
`/etc` beyond the dynamic loader's cache, no `/home`, `/root`, `/var`, `/opt`, `/sys`.
"""

from __future__ import annotations

import bisect
import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from evaluator.both_sides.verdict import PolicyFinding

_QUOTE_CAP = 200
WITHHELD = (
    "[evaluator] the compile log is withheld: the compiler opened a file outside the allowed include roots "
    "(the toolkit, the host compiler's headers, tvm-ffi, the candidate's folder)"
)

# Splices: backslash, optional blanks (GCC accepts them with a warning), newline.
_SPLICE = re.compile(r"\\[ \t\f\v]*\r?\n")
_DIRECTIVE = re.compile(r"^[ \t\f\v]*(#|%:|\?\?=)[ \t\f\v]*([A-Za-z_]\w*|\d+)?(.*)$", re.DOTALL)
_TARGET = re.compile(r'^(<([^>\n]*)>|"([^"\n]*)")')
_FILE_READING = {"include_next", "import", "embed"}
_PRAGMA_READS = re.compile(r"^\s*(?:GCC|clang)\s+dependency\b|^\s*dependency\b")
_PRAGMA_TOKENS = re.compile(r"\bGCC\s+dependency\b")
_HAS_INCLUDE = re.compile(r"\b(__has_include_next|__has_include|__has_embed)\b\s*(\(\s*([^)\n]*)\))?")
_PRAGMA_OPERATOR = re.compile(r"\b_Pragma\s*\(\s*(?:L|u8|u|U)?\"((?:[^\"\\\n]|\\.)*)\"\s*\)")
_DEVICE_PREFIXES = ("/dev/", "/proc/", "/sys/")
_FORBIDDEN_HEADER = re.compile(r"(^|/)(cublas\w*|cudnn\w*)(\.h|\.hpp)?$", re.IGNORECASE)
# Where the directive reader's view changes: a comment, a raw or ordinary literal, the end of a line.
_READER_TOKEN = re.compile(r"//|/\*|R\"|[\"'\n]")
_RAW_OPENER = re.compile(r'R"([^()\\ \n]{0,16})\(')
_NOT_NEWLINE = re.compile(r"[^\n]")
# A literal's characters up to its closing quote or the end of its line; a backslash takes the next character.
_LITERAL_BODY = {quote: re.compile(rf"(?:[^{quote}\\\n]|\\[\s\S])*") for quote in "\"'"}


def logical_lines(source: str) -> list[tuple[int, str]]:
    """(first physical line number, text) of each line after splicing, as translation phase 2 makes them.
    The source has no NUL bytes (the policy refuses them first), so NUL marks where a splice was."""
    out: list[tuple[int, str]] = []
    line_no = 1
    for raw in _SPLICE.sub("\x00", source).split("\n"):
        out.append((line_no, raw.replace("\x00", "")))
        line_no += 1 + raw.count("\x00")
    return out


def translated_lines(source: str) -> list[tuple[int, str, str]]:
    """The source as the preprocessor's directive reader sees it: (first physical line, text, text with string
    and character literal contents blanked) per line, after splicing and with every comment replaced by one
    space; a block comment spanning lines joins them, so `#/*newline*/include` is one line.

    Runs of ordinary characters are copied whole between the tokens that change how text is read, so a mebibyte
    of hostile source costs a regular-expression scan, not a Python step per character."""
    logical = logical_lines(source)
    text = "".join(line + "\n" for _, line in logical)
    offsets, numbers, at = [], [], 0
    for number, line in logical:
        offsets.append(at)
        numbers.append(number)
        at += len(line) + 1
    n = len(text)
    result: list[tuple[int, str, str]] = []
    code: list[str] = []
    blanked: list[str] = []
    first: int | None = None  # the physical line of the current line's first piece

    def line_of(pos: int) -> int:
        return numbers[bisect.bisect_right(offsets, pos) - 1]

    def piece(a: str, b: str, pos: int) -> None:
        nonlocal first
        if first is None:
            first = line_of(pos)
        code.append(a)
        blanked.append(b)

    def end_line(pos: int) -> None:
        nonlocal first
        result.append((line_of(pos) if first is None else first, "".join(code), "".join(blanked)))
        code.clear()
        blanked.clear()
        first = None

    def region(a: str, b: str, pos: int) -> None:
        """A literal's text, which can hold newlines (a raw string, an escaped newline): each one ends a line."""
        if "\n" not in a:
            piece(a, b, pos)
            return
        for index, (part_a, part_b) in enumerate(zip(a.split("\n"), b.split("\n"), strict=True)):
            if index:
                end_line(pos - 1)
            if part_a:
                piece(part_a, part_b, pos)
            pos += len(part_a) + 1

    i = 0
    while i < n:
        match = _READER_TOKEN.search(text, i)
        j = n if match is None else match.start()
        if j > i:  # ordinary characters, on one logical line
            piece(text[i:j], text[i:j], i)
        if match is None:
            break
        i = j
        lead = match.group()
        if lead == "\n":
            end_line(i)
            i += 1
        elif lead == "//":
            piece(" ", " ", i)
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
        elif lead == "/*":
            piece(" ", " ", i)
            close = text.find("*/", i + 2)
            i = n if close < 0 else close + 2
        elif lead == 'R"':
            opener = None if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_") else _RAW_OPENER.match(text, i)
            if opener is None:  # an identifier ending in R, or no valid delimiter: R is an ordinary character
                piece("R", "R", i)
                i += 1
                continue
            close = text.find(")" + opener.group(1) + '"', opener.end())
            stop = n if close < 0 else close + len(opener.group(1)) + 2
            literal = text[i:stop]
            region(literal, _NOT_NEWLINE.sub(" ", literal), i)
            i = stop
        elif lead == "'" and i > 0 and text[i - 1].isalnum():  # 1'000 is a digit separator
            piece("'", "'", i)
            i += 1
        else:  # a string or character literal, to its closing quote or the end of its line
            body = _LITERAL_BODY[lead].match(text, i + 1)  # always matches, if only the empty string
            stop = min((body.end() if body else n) + 1, n)
            literal = text[i:stop]
            region(literal, literal[:1] + _NOT_NEWLINE.sub(" ", literal[1:-1]) + literal[1:][-1:], i)
            i = stop
    if code:  # an unterminated block comment swallowed the last newline
        end_line(n)
    return result


def directive_findings(source: str) -> list[PolicyFinding]:
    """Findings for every directive or operator that makes the preprocessor read a named file."""
    physical = source.splitlines()
    lines = translated_lines(source)
    starts = [n for n, _, _ in lines]
    code = [c for _, c, _ in lines]
    code_no_strings = [b for _, _, b in lines]
    findings: list[PolicyFinding] = []

    def add(rule: str, message: str, index: int) -> None:
        line_no = starts[index] if index < len(starts) else index + 1
        findings.append(PolicyFinding(rule, message, line_no, _quote(physical, line_no)))

    for index, text in enumerate(code):
        m = _DIRECTIVE.match(text)
        if m:
            introducer, name, rest = m.group(1), m.group(2) or "", m.group(3).strip()
            if introducer == "??=":
                add("include-path", "a directive written with the ??= trigraph is not allowed", index)
            elif name == "include":
                for rule, message in check_target(rest, "#include"):
                    add(rule, message, index)
            elif name in _FILE_READING:
                add("include-path", f"#{name} is not allowed (it reads a file; use #include)", index)
            elif (name == "line" and '"' in rest) or name.isdigit():
                add("include-path", "#line with a file name is not allowed (diagnostics would quote that file)", index)
            elif name == "line" and not rest.isdigit():
                # `#line 1 F`: the operands are macro-expanded, so F can still name a file; and the lines after it
                # would be attributed to that name, out of the policy's view after macro expansion.
                add("include-path", "#line may give only a line number, not a macro (it can name a file)", index)
            elif name == "pragma" and _PRAGMA_READS.search(rest):
                add("include-path", "#pragma GCC dependency is not allowed (it reads a file)", index)
        if _PRAGMA_TOKENS.search(code_no_strings[index]) and not (m and m.group(2) == "pragma"):
            # `P(GCC dependency "f")` with `#define P(x) _Pragma(#x)`: the pragma is built by stringizing, and
            # `nvcc -E` consumes it, so only these tokens show it. Pasted tokens are contained by the sandbox.
            add("include-path", "GCC dependency is not allowed (a pragma that reads a file)", index)
        for op in _PRAGMA_OPERATOR.finditer(text):
            body = re.sub(r"\\(.)", r"\1", op.group(1))
            if _PRAGMA_READS.search(body):
                add("include-path", '_Pragma("GCC dependency ...") is not allowed (it reads a file)', index)
        for has in _HAS_INCLUDE.finditer(code_no_strings[index]):
            what = has.group(1)
            if what != "__has_include":
                add("include-path", f"{what} is not allowed (it probes for a file)", index)
                continue
            # The blanked copy keeps positions: read the argument from the line with strings intact.
            argument = text[has.start(3) : has.end(3)].strip() if has.group(3) is not None else ""
            for rule, message in check_target(argument, "__has_include"):
                add(rule, message, index)
    return findings


def check_target(target_text: str, what: str) -> list[tuple[str, str]]:
    """(rule, message) for an #include or __has_include target that is not a plain relative header name."""
    target = _TARGET.match(target_text)
    if target is None:
        return [("include-path", f'{what} must name a header in <...> or "..." (not a macro)')]
    path = (target.group(2) if target.group(2) is not None else target.group(3)).strip()
    found = []
    if path.startswith(_DEVICE_PREFIXES) or path in ("/dev", "/proc", "/sys"):
        found.append(("include-path", f"{what} of a device or kernel file '{path}'"))
    elif path.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", path):
        found.append(("include-path", f"absolute {what} path '{path}'"))
    if ".." in re.split(r"[\\/]", path):
        found.append(("include-path", f"parent-directory {what} path '{path}'"))
    if _FORBIDDEN_HEADER.search(path):
        found.append(("forbidden-library", f"includes vendor library header '{path}'"))
    return found


def preprocessed_findings(own_lines: Iterable[tuple[int, str]]) -> list[PolicyFinding]:
    """File-reading forms visible only after macro expansion, in the candidate's own lines of `nvcc -E` output:
    a `_Pragma` built by stringizing becomes `#pragma GCC dependency ...` (assembler directives built from
    joined or stringized literals: evaluator/source_policy/asm_strings.py)."""
    findings: list[PolicyFinding] = []
    for number, raw in own_lines:
        m = _DIRECTIVE.match(raw)
        if m and (m.group(2) or "") == "pragma" and _PRAGMA_READS.search(m.group(3)):
            findings.append(
                PolicyFinding("include-path", "#pragma GCC dependency after macro expansion", number, _cap(raw))
            )
    return findings


# --------------------------------------------------------------------------- what nvcc opened


def parse_dependencies(text: str) -> list[str]:
    """The prerequisites named by the text of a make-style dependency file."""
    text = text.replace("\\\n", " ")
    deps: list[str] = []
    for rule in text.splitlines():
        _, sep, rest = rule.partition(": ")
        if not sep:
            continue
        for token in re.findall(r"(?:\\.|[^\s\\])+", rest):
            deps.append(re.sub(r"\\(.)", r"\1", token).replace("$$", "$"))
    return deps


_ROOTS_CACHE: dict[tuple[str, tuple[str, ...]], tuple[Path, ...]] = {}


def include_roots(nvcc: str, includes: Iterable[str], env: dict[str, str] | None = None) -> tuple[Path, ...]:
    """The include search list nvcc's preprocessor really uses, resolved: the -I and -isystem folders of the
    host compiler command nvcc would run (`--dryrun`: the toolkit's include folders and `includes`), then that
    host compiler's own (`-E -v`). Two quick calls on trusted input (no preprocessing of the toolkit's headers),
    outside the sandbox; cached per toolchain."""
    key = (nvcc, tuple(includes))
    if key not in _ROOTS_CACHE:
        with tempfile.TemporaryDirectory(prefix="ptxbench-roots-") as tmp:
            empty = Path(tmp) / "empty.cu"
            empty.write_text("")
            plan = _run([nvcc, "--dryrun", "-E", "-std=c++17", *(f"-I{p}" for p in key[1]), str(empty)], env)
        command = next((line[3:] for line in plan.splitlines() if line.startswith("#$ ") and " -E " in line), "")
        words = shlex.split(command) if command else []
        roots = [w[2:] for w in words if w.startswith("-I") and len(w) > 2]
        roots += [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-isystem", "-I")]
        host = words[0] if words else "gcc"
        listing = _run([host, "-xc++", "-std=c++17", "-E", "-v", os.devnull, "-o", os.devnull], env)
        inside = False
        for line in listing.splitlines():
            if "search starts here" in line:
                inside = True
            elif line.startswith("End of search list"):
                inside = False
            elif inside and line.startswith(" "):
                roots.append(line.strip())
        roots += list(key[1])
        _ROOTS_CACHE[key] = tuple(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))
    return _ROOTS_CACHE[key]


def _run(cmd: list[str], env: dict[str, str] | None) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout + proc.stderr


def is_under(path: str, roots: Iterable[Path], cwd: Path) -> bool:
    resolved = Path(os.path.realpath(os.path.join(cwd, path)))
    return any(resolved == r or r in resolved.parents for r in roots)


def outside_roots(deps: Iterable[str], roots: Iterable[Path], cwd: Path) -> list[str]:
    """The dependency paths (as nvcc wrote them) that resolve outside every root."""
    roots = tuple(roots)
    return [d for d in dict.fromkeys(deps) if not is_under(d, roots, cwd)]


# --------------------------------------------------------------------------- redaction

# A diagnostic's location at the start of a line: GCC "file:12:3:", EDG "file(12):", gas "file:12:" and
# "file: Assembler messages:", "In file included from file:3," and its "                 from file:3" lines.
_LOCATION = re.compile(r"^(?:In file included from |\s+from )?(?P<path>[^\s:()]+?)(?::\d+[:,]|\(\d+\)|: Assembler)")
_ABSOLUTE = re.compile(r"(?<![\w.])(/[^\s:()'\"`,;]+)")
# Files nvcc writes in the sandbox's private /tmp (its intermediates: ptxas and gas locate errors in them).
_NVCC_TEMP = re.compile(r"^/tmp/tmpxft_[0-9a-f]+_\d+-")


def quotable_roots(include_roots_: Iterable[Path], toolkit: Path | None) -> tuple[Path, ...]:
    """Folders whose paths (and lines) may appear in the published log: the include roots, the toolkit and
    the system tool and library folders (the linker and assembler name themselves and the libraries)."""
    extra = [toolkit] if toolkit is not None else []
    extra += [Path(p) for p in ("/usr/bin", "/bin", "/usr/lib", "/lib", "/usr/lib64", "/lib64", "/usr/libexec")]
    return tuple(dict.fromkeys([*include_roots_, *(Path(os.path.realpath(p)) for p in extra)]))


def redact_output(text: str, roots: Iterable[Path], cwd: Path) -> tuple[str, int]:
    """`text` without the diagnostics located in (or the lines naming) files outside `roots` and `cwd`;
    and how many lines were cut. A diagnostic is its first line and the indented lines under it (the quoted
    source line, the caret)."""
    roots = (*tuple(roots), Path(os.path.realpath(cwd)))

    def allowed(path: str) -> bool:
        return bool(_NVCC_TEMP.match(path)) or is_under(path, roots, cwd)

    kept: list[str] = []
    cut = 0
    dropping = False
    for line in text.split("\n"):
        if line[:1] in (" ", "\t") and not line.lstrip().startswith("from "):
            if dropping:
                cut += 1
            else:
                kept.append(line)
            continue
        location = _LOCATION.match(line)
        dropping = location is not None and not allowed(location.group("path"))
        if not dropping and any(not allowed(p) for p in _ABSOLUTE.findall(line)):
            dropping = True
        if dropping:
            cut += 1
        else:
            kept.append(line)
    if cut:
        kept.append(f"[evaluator] {cut} line(s) naming or quoting files outside the allowed include roots cut")
    return "\n".join(kept), cut


def _quote(lines: list[str], line_no: int) -> str:
    if 1 <= line_no <= len(lines):
        return _cap(lines[line_no - 1])
    return ""


def _cap(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _QUOTE_CAP else text[: _QUOTE_CAP - 1] + "…"


def outside_finding(paths: list[str]) -> PolicyFinding:
    """The finding for files nvcc opened outside the include roots, naming them as nvcc did (the path the
    source wrote, not where a link leads), never their content."""
    named = ", ".join(f"'{p[:120]}'" for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return PolicyFinding("include-path", f"the compiler opened files outside the allowed include roots: {named}")
