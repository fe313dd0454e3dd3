"""Source policy, checked before anything is compiled.

The benchmark measures the candidate's own kernels, so the source may not hand the work to a vendor library
(cuBLAS, cuBLASLt, cuDNN), load code at run time (dlopen/dlsym), or read files outside the compiler's
include path (absolute or parent-relative #include, and every other directive that names a file: see
evaluator/build/includes.py), or reach the host assembler's file-reading and macro directives from a string
(evaluator/source_policy/asm_strings.py: literals decoded as the compiler decodes them, read as gas reads them). Comments are
blanked out before the checks, so a library named in a comment is fine; string literals are blanked for the
identifier rules too, so a message that mentions cuBLAS is fine, but not text the assembler reads (`asm`,
attributes). CUTLASS and CuTe headers are allowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from evaluator.both_sides.verdict import PolicyFinding
from evaluator.build.includes import directive_findings, preprocessed_findings
from evaluator.source_policy import asm_strings

MAX_SOURCE_BYTES = 1024 * 1024
_QUOTE_CAP = 200

_RUN_EXPORT = re.compile(r"\bTVM_FFI_DLL_EXPORT_TYPED_FUNC\s*\(\s*run\s*,")
# Identifiers of the vendor libraries' APIs, types and constants (cublasGemmEx, cublasLtHandle_t, CUDNN_STATUS_...).
_FORBIDDEN_IDENTIFIER = re.compile(r"\b(cublas\w*|cudnn\w*|CUBLAS\w*|CUDNN\w*)\b")
_DYNAMIC_LOADING = re.compile(
    r"\b(dlopen|dlmopen|dlsym|dlvsym|dl_iterate_phdr|dladdr1?|dlinfo|_r_debug|__libc_dlopen_mode|__libc_dlsym)\b"
)
_LINE_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"([^"\n]*)"')


def check_source(source: str | bytes) -> list[PolicyFinding]:
    """Every policy violation in `source`, in line order; an empty list means the source may be compiled."""
    if isinstance(source, bytes):
        if len(source) > MAX_SOURCE_BYTES:
            return [_too_large(len(source))]
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            return [PolicyFinding("encoding", f"source is not UTF-8 text (byte {exc.start})")]
    size = len(source.encode("utf-8"))
    if size > MAX_SOURCE_BYTES:
        return [_too_large(size)]
    if "\x00" in source:
        return [PolicyFinding("encoding", "source contains NUL bytes; it must be text")]

    lines = source.splitlines()
    code = strip_comments(source)
    code_no_strings = strip_comments(source, blank_strings=True)
    findings: list[PolicyFinding] = []

    # Every directive that reads a file, read as the preprocessor reads it (evaluator/build/includes.py).
    findings.extend(directive_findings(source))
    # Assembler text, decoded as the compiler decodes string literals (evaluator/source_policy/asm_strings.py).
    groups, computed = asm_strings.source_groups(source)
    findings.extend(asm_strings.findings(groups, computed, lambda n: _quote(lines, n)))
    findings.extend(_assembler_symbol_findings(groups, lambda n: _quote(lines, n)))

    seen: set[tuple[str, int]] = set()
    for pattern, rule, what in (
        (_FORBIDDEN_IDENTIFIER, "forbidden-library", "uses a vendor math library (cuBLAS/cuDNN)"),
        (_DYNAMIC_LOADING, "dynamic-loading", "loads code at run time"),
    ):
        for match in pattern.finditer(code_no_strings):
            line_no = code_no_strings.count("\n", 0, match.start()) + 1
            if (rule, line_no) in seen or _is_include_line(code, line_no):
                continue  # one finding per rule and line; includes are reported by the include rule
            seen.add((rule, line_no))
            findings.append(PolicyFinding(rule, f"{what}: '{match.group(0)}'", line_no, _quote(lines, line_no)))

    if not _RUN_EXPORT.search(code):
        findings.append(
            PolicyFinding(
                "missing-run",
                "the source must export the entry point with TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, ...)",
            )
        )
    findings.sort(key=lambda f: (f.line or 0, f.rule))
    return findings


def check_preprocessed(text: str, source_name: str = "kernel.cu") -> list[PolicyFinding]:
    """The identifier rules again, on the preprocessor's output (`nvcc -E`), restricted to the candidate's own lines.

    Token pasting (`CAT(dl, open)`) or a macro from a header cannot hide a forbidden call: after expansion the
    identifier is there. Lines from system and tvm-ffi headers (which declare dlopen) are skipped using the
    preprocessor's line markers. Assembler labels binding a declaration to a forbidden symbol are caught too.
    """
    own = own_lines(text, source_name)
    findings: list[PolicyFinding] = []
    seen: set[tuple[str, int]] = set()
    for number, raw in own:
        code = strip_comments(raw, blank_strings=True)
        hits = [
            ("forbidden-library", m.group(0), "uses a vendor math library (cuBLAS/cuDNN)")
            for m in _FORBIDDEN_IDENTIFIER.finditer(code)
        ]
        hits += [("dynamic-loading", m.group(0), "loads code at run time") for m in _DYNAMIC_LOADING.finditer(code)]
        for rule, what, message in hits:
            if (rule, number) in seen:
                continue
            seen.add((rule, number))
            text_line = raw.strip()
            quote = text_line if len(text_line) <= _QUOTE_CAP else text_line[: _QUOTE_CAP - 1] + "…"
            findings.append(PolicyFinding(rule, f"{message} after macro expansion: '{what}'", number, quote))
    findings.extend(preprocessed_findings(own))
    # Assembler text after macro expansion: `asm(CAT(".inc", "bin ..."))`, strings built by stringizing.
    groups, computed = asm_strings.own_groups(own)
    expanded = dict(own)

    def quotes(line: int) -> str:
        return expanded.get(line, "")

    after = " after macro expansion"
    findings.extend(asm_strings.findings(groups, computed, quotes, suffix=after))
    findings.extend(f for f in _assembler_symbol_findings(groups, quotes, suffix=after) if (f.rule, f.line) not in seen)
    return findings


def own_lines(text: str, source_name: str = "kernel.cu") -> list[tuple[int, str]]:
    """(original line number, expanded text) of the candidate's own lines of `nvcc -E` output, found by the
    preprocessor's line markers. A line inside a raw string literal is never a marker: `R"(` + a line
    `# 1 "/usr/include/stdio.h"` would otherwise hide every later line of the candidate's from these checks."""
    own: list[tuple[int, str]] = []
    line_no, in_own_file, raw_end = 0, False, None
    for raw in text.splitlines():
        # Most of the output is header lines: the marker's pattern starts with '#', and a file's own-ness is decided
        # once per marker, not per line.
        marker = _LINE_MARKER.match(raw) if raw_end is None and raw.startswith("#") else None
        if marker:
            line_no, in_own_file = int(marker.group(1)), marker.group(2).rsplit("/", 1)[-1] == source_name
            continue
        if in_own_file:
            own.append((line_no, raw))
            raw_end = asm_strings.open_raw_string(raw, raw_end)
        line_no += 1
    return own


def _assembler_symbol_findings(
    groups: list[asm_strings.LiteralGroup], quote: Callable[[int], str], *, suffix: str = ""
) -> list[PolicyFinding]:
    """The identifier rules on text the assembler reads: `int f() asm("dlopen");`, `asm("call dlopen@PLT")`,
    `__attribute__((weakref("dlopen")))` bind or call a symbol that no identifier in the code names."""
    found: list[PolicyFinding] = []
    for line, text in asm_strings.assembler_texts(groups):
        for pattern, rule, what in (
            (_FORBIDDEN_IDENTIFIER, "forbidden-library", "names a vendor library symbol"),
            (_DYNAMIC_LOADING, "dynamic-loading", "names a run-time loader symbol"),
        ):
            m = pattern.search(text)
            if m:
                message = f"assembler text {what}{suffix}: '{m.group(0)}'"
                found.append(PolicyFinding(rule, message, line, asm_strings.cap_quote(quote(line))))
    return found


def _is_include_line(code: str, line_no: int) -> bool:
    line = code.split("\n")[line_no - 1] if line_no - 1 < code.count("\n") + 1 else ""
    return bool(re.match(r"^[ \t]*#[ \t]*include\b", line))


def _quote(lines: list[str], line_no: int) -> str:
    if 1 <= line_no <= len(lines):
        text = lines[line_no - 1].strip()
        return text if len(text) <= _QUOTE_CAP else text[: _QUOTE_CAP - 1] + "…"
    return ""


def _too_large(size: int) -> PolicyFinding:
    return PolicyFinding("size", f"source is {size} bytes; the limit is {MAX_SOURCE_BYTES} bytes (1 MiB)")


def strip_comments(source: str, *, blank_strings: bool = False) -> str:
    """`source` with // and /* */ comments (and, if asked, string/char literal contents) replaced by spaces.

    Newlines are kept, so line numbers stay the same. Handles escapes, line splices inside // comments,
    and raw string literals R"delim(...)delim".
    """
    out: list[str] = []
    i, n = 0, len(source)

    def blank(text: str) -> str:
        return "".join(c if c == "\n" else " " for c in text)

    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = i
            while j < n and source[j] != "\n":
                j += 2 if source[j] == "\\" and j + 1 < n else 1
            out.append(blank(source[i:j]))
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(source[i:j]))
            i = j
        elif (
            c == "R"
            and source.startswith('R"', i)
            and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == "_"))
        ):
            m = re.match(r'R"([^()\\ \n]{0,16})\(', source[i:])
            if m is None:
                out.append(c)
                i += 1
                continue
            end_marker = ")" + m.group(1) + '"'
            j = source.find(end_marker, i + m.end())
            j = n if j < 0 else j + len(end_marker)
            out.append('R""' + blank(source[i + 3 : j]) if blank_strings else source[i:j])
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and source[i - 1].isalnum())):  # 1'000 is a digit separator
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + blank(source[i + 1 : j - 1]) + source[j - 1] if blank_strings else source[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)
