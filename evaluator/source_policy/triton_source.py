"""What Triton compiles, and the refusals that keep it the function the Triton policy checked.

The policy reads the file as Python's parser sees it. Triton does not compile that tree: for each `@triton.jit`
function it reads the function's lines back from the file (`inspect.getsourcelines`: from the code object's
first line, the first decorator, to the end of the indented block), dedents them, cuts everything before the
first line that starts `def name(` and parses what is left (triton/runtime/jit.py, `JITCallable.__init__`).
That `def` line may sit inside a string (a decorator's argument, a docstring of the kernel's own body once
dedent leaves nothing to strip), and then Triton compiles a body the policy never saw. So each kernel's text is
extracted here by the same rule, from the same lines, and must parse to exactly the tree of the function the
policy checked (decorators aside, which Triton cuts off); anything else is refused.

The rest pins down which functions those are. Python decodes an imported file by its coding declaration,
while the policy parses the text it was given: a declaration other than UTF-8 (UTF-7 turns `+AAo-` in a
comment into a new line) is refused. A kernel is a function whose innermost decorator is `triton.jit` (or `jit`
imported from triton), under nothing but `triton.heuristics(...)`/`triton.autotune(...)`; `jit` named anywhere
else (called on a function or a lambda, bound to another name, a decorator over another decorator) would make
Triton compile a function the policy checked as host code, or none it checked at all, and is refused; so is
binding a name that an import binds by any other means, which would make a spelling mean something else, and a
kernel defined inside a kernel (Triton compiles none; its text would be extracted once per enclosing kernel).
"""

from __future__ import annotations

import ast
import codecs
import inspect
import io
import re
import textwrap
import tokenize
from collections.abc import Iterator
from typing import Any

from evaluator.both_sides.verdict import PolicyFinding

# Triton's own rule for where a kernel's text starts (triton/runtime/jit.py), after textwrap.dedent.
TRITON_DEF = re.compile(r"^def\s+\w+\s*\(", re.MULTILINE)
# The lines inspect.findsource accepts as a function's first line; from the code object's first line it walks
# up to one (Python 3.11), or takes that line as it is (later Pythons). Requiring the first line to match
# makes both rules give the same line.
FIRST_LINE = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")
# What the innermost decorator of a kernel resolves to, and what may wrap it.
JIT = "triton.jit"
WRAPPERS = frozenset({"triton.heuristics", "triton.autotune"})
_JIT_SPELLINGS = frozenset({"triton.jit", "jit"})
_UTF8 = ("utf-8", "utf-8-sig")


def coding_findings(source: str) -> list[PolicyFinding]:
    """A coding declaration makes Python decode the file otherwise than the text the policy parsed."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source.encode("utf-8")).readline)
    except SyntaxError as exc:
        return [PolicyFinding("encoding", f"the coding declaration is refused: {exc.msg}", exc.lineno)]
    if codecs.lookup(encoding).name not in _UTF8:
        return [
            PolicyFinding(
                "encoding",
                f"declares the coding '{encoding}'; Python would decode the file otherwise than it was checked"
                " (only UTF-8 is accepted)",
            )
        ]
    return []


def file_lines(source: str) -> list[str]:
    """The file's lines as `linecache` gives them to inspect (universal newlines, each line with its end, the
    last one too)."""
    if source.startswith("\ufeff"):
        source = source[1:]
    lines = io.StringIO(source, newline=None).readlines()
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def extracted_source(lines: list[str], fn: ast.FunctionDef) -> str | None:
    """The text Triton would compile for `fn`, by Triton's rule on the file's `lines`; None where Triton would
    find none, or where the rule depends on the Python version (a first line inspect would walk up from)."""
    first = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno  # the code object's first line
    start = first - 1
    if not 0 <= start < len(lines) or not FIRST_LINE.match(lines[start]):
        return None
    try:
        block = inspect.getblock(lines[start:])
    except (SyntaxError, tokenize.TokenError, ValueError):
        return None
    text = textwrap.dedent("".join(block))
    found = TRITON_DEF.search(text)
    return text[found.start() :] if found else None


def same_function(extracted: str | None, fn: ast.FunctionDef) -> bool:
    """Whether `extracted` parses to exactly `fn` without its decorators (Triton compiles from that tree)."""
    if extracted is None:
        return False
    try:
        tree = ast.parse(extracted)
    except (SyntaxError, ValueError):
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return False
    bare = ast.FunctionDef(**{field: getattr(fn, field) for field in fn._fields})
    bare.decorator_list = []
    return _same_tree(tree.body[0], bare)


def _same_tree(a: ast.AST, b: ast.AST) -> bool:
    """Whether two trees are equal field by field, positions aside (what `ast.dump` compares, without building
    two strings of a 1 MiB file's size); constants equal in value but not in type or spelling (1, 1.0, True)
    differ."""
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, ast.AST):
            stack.extend((getattr(x, f, None), getattr(y, f, None)) for f in x._fields)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y or repr(x) != repr(y):
            return False
    return True


def kernel_findings(tree: ast.Module, source: str) -> list[PolicyFinding]:
    """Every refusal that keeps what Triton compiles the functions the policy checked as kernels."""
    survey = _Survey(tree)
    imports = survey.imported_names()
    findings = survey.rebindings(imports)
    allowed: set[int] = set()  # the jit decorators in their one admitted place
    lines = file_lines(source)
    kernels = [(fn, outer) for fn, outer in survey.decorated if _is_jitted(fn, imports)]
    kernel_ids = {id(fn) for fn, _ in kernels}
    for fn, enclosing in kernels:
        innermost = fn.decorator_list[-1]
        target = _decorated(innermost)
        if _spelled_jit(innermost) and resolve(target, imports) == JIT:
            allowed.add(id(target))
        else:
            findings.append(_finding(fn, f"the kernel '{fn.name}': its innermost decorator must be triton.jit"))
        for dec in fn.decorator_list[:-1]:
            if resolve(_decorated(dec), imports) not in WRAPPERS or not isinstance(dec, ast.Call):
                findings.append(
                    _finding(
                        dec,
                        f"the kernel '{fn.name}' may be wrapped only by triton.heuristics(...) or"
                        " triton.autotune(...) above its triton.jit",
                    )
                )
        outer = next((o for o in enclosing if id(o) in kernel_ids), None)
        if outer is not None:
            # Triton compiles no function defined in a kernel; refusing it also keeps the extraction below linear
            # in the file's size (a kernel's text holds every kernel nested in it).
            findings.append(_finding(fn, f"the kernel '{fn.name}' is defined inside the kernel '{outer.name}'"))
        elif not isinstance(fn, ast.FunctionDef) or not same_function(extracted_source(lines, fn), fn):
            findings.append(
                _finding(
                    fn,
                    f"the kernel '{fn.name}': the text Triton would compile (its lines from the first one that starts"
                    " 'def name(', dedented) is not this function; keep lines that start with 'def' out of its"
                    " decorators and strings, and define kernels at top level",
                )
            )
    for node in survey.names:
        if id(node) not in allowed and _names_jit(node, imports):
            findings.append(
                _finding(node, "uses triton.jit other than as a kernel's innermost decorator (@triton.jit)")
            )
    return findings


_Function = ast.FunctionDef | ast.AsyncFunctionDef


class _Survey:
    """What the kernel checks need from the tree, gathered in one pass (the file may be 1 MiB)."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: list[tuple[ast.Import | ast.ImportFrom, ast.alias]] = []
        self.bindings: list[tuple[str, ast.AST]] = []  # names bound other than by import
        self.names: list[ast.Name | ast.Attribute] = []  # loaded names, and attributes named `jit`
        self.decorated: list[tuple[_Function, tuple[_Function, ...]]] = []  # with the decorated functions around
        stack: list[tuple[ast.AST, tuple[_Function, ...]]] = [(tree, ())]
        while stack:
            node, enclosing = stack.pop()
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.extend((node, alias) for alias in node.names)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.names.append(node)
            elif isinstance(node, ast.Attribute) and node.attr == "jit":
                self.names.append(node)
            else:
                self.bindings.extend((name, node) for name in bound_names(node))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
                self.decorated.append((node, enclosing))
                enclosing = (node, *enclosing)
            stack.extend((child, enclosing) for child in ast.iter_child_nodes(node))

    def imported_names(self) -> dict[str, str]:
        """Each name an import binds, anywhere in the file, to the dotted name it stands for."""
        out: dict[str, str] = {}
        for node, alias in self.imports:
            if isinstance(node, ast.Import):
                out[alias.asname or alias.name.split(".")[0]] = _import_target(node, alias)
            elif not node.level and node.module and alias.name != "*":
                out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        return out

    def rebindings(self, imports: dict[str, str]) -> list[PolicyFinding]:
        """A name an import binds that is bound otherwise too (or imported as two things), and `jit` bound by
        anything but its import: refused, since what a spelling such as `triton.jit` stands for would then
        depend on the order code runs in."""
        findings = []
        seen: dict[str, str] = {}
        for node, alias in self.imports:
            name, target = alias.asname or alias.name.split(".")[0], _import_target(node, alias)
            if seen.setdefault(name, target) != target:
                findings.append(_finding(node, f"imports two different things as '{name}'"))
        for name, where in self.bindings:
            if name in imports:
                findings.append(_finding(where, f"binds '{name}', a name its import binds"))
            elif name == "jit":
                findings.append(_finding(where, "binds 'jit', the name of triton.jit"))
        return findings


def imported_names(tree: ast.Module) -> dict[str, str]:
    """Each name an import binds, anywhere in the file, to the dotted name it stands for."""
    return _Survey(tree).imported_names()


def _is_jitted(fn: _Function, imports: dict[str, str]) -> bool:
    return any(resolve(_decorated(d), imports) == JIT or _spelled_jit(d) for d in fn.decorator_list)


def _decorated(dec: ast.expr) -> ast.expr:
    return dec.func if isinstance(dec, ast.Call) else dec


def _spelled_jit(dec: ast.expr) -> bool:
    return dotted(_decorated(dec)) in _JIT_SPELLINGS


def _names_jit(node: ast.Name | ast.Attribute, imports: dict[str, str]) -> bool:
    """`node` denotes triton.jit: by what the name resolves to, or by its spelling alone (a `jit` of the file's
    own is refused as well: a reader, and the policy, would take it for Triton's)."""
    if isinstance(node, ast.Name):
        return node.id == "jit" or imports.get(node.id) == JIT
    return dotted(node) == "triton.jit" or resolve(node, imports) == JIT


def resolve(node: ast.expr, imports: dict[str, str]) -> str | None:
    """The dotted name `node` stands for, through the file's imports; None for a name no import binds."""
    name = dotted(node)
    if not name:
        return None
    head, _, rest = name.partition(".")
    if head not in imports:
        return None
    return f"{imports[head]}.{rest}" if rest else imports[head]


def _import_target(node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
    if isinstance(node, ast.Import):
        return alias.name if alias.asname else alias.name.split(".")[0]
    return f"{'.' * node.level}{node.module or ''}.{alias.name}"


def bound_names(node: ast.AST) -> Iterator[str]:
    """The names `node` binds, other than by import (every binding form of Python's grammar)."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        yield node.id
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        yield node.name
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names
    elif type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):  # Python 3.12 type parameters
        name = getattr(node, "name", None)
        if isinstance(name, str):
            yield name


def dotted(node: ast.AST) -> str:
    """`a.b.c` for a chain of attributes on a name, else ""."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _finding(node: ast.AST, message: str) -> PolicyFinding:
    return PolicyFinding("kernel-source", message, getattr(node, "lineno", None))
