"""Every evaluator module and attribute an attack payload reaches by name still exists where the payload looks.

The corpus (tests/adversarial/) and the CPU attack variants (tests/kernels/) reach harness internals at run time by
name: `sys.modules.get('evaluator.candidate_process.timing')`, `import evaluator.candidate_process.timing` and a
patch of `HostTimer.now`, `sys.modules['__main__'].OutputFiles`, a gc scan for objects whose type is named
`Session` or `TimedSeries`. If the module moves or the name changes, the payload finds nothing, the kernel turns
honest, and its corpus entry "passes" for the wrong reason. So this test reads the names the way the payload will
see them (C string literals joined as the compiler joins them, Python string concatenations folded, comments
included) and checks each against the real evaluator:

- a dotted `evaluator.*` name resolves to a module file, and the rest of it to attributes of that module;
- a payload's module (named in a payload, not a comment) is one the attacked process actually loads (the static
  import closure of the candidate process or of the Triton compile), so `sys.modules` has it under that name;
- a variable bound to such a module (or to the harness's `__main__`) names only attributes it has;
- a type name a gc scan compares against is a class defined in a module of that process;
- a string that only starts a module name (`"evaluator." + x`) fails: resolve it by hand and add it here.

tests/adversarial_checks/test_adversarial_payloads.py goes further for some payloads (runs them against the real modules).
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import re
from pathlib import Path

import pytest

from evaluator.source_policy.asm_strings import decode_literal
from tests.support.evaluator_imports import CANDIDATE_PACKAGE, import_edges, loaded_by

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [
        *(REPO / "tests" / "adversarial").glob("*.cu"),
        *(REPO / "tests" / "adversarial").glob("*.py"),
        *(REPO / "tests" / "kernels").glob("*.cu"),
    ]
)
# The corpus runner names evaluator modules as their user, not as a target.
RUNNERS = {REPO / "tests" / "adversarial" / "corpus.py"}
# The processes where submitted code runs, by the module each starts with: what `sys.modules` can hold there.
ATTACKED_PROCESSES = (f"{CANDIDATE_PACKAGE}.child", f"{CANDIDATE_PACKAGE}.triton_aot")
# The harness's `__main__` in the candidate process: the module `python -m` runs.
MAIN = f"{CANDIDATE_PACKAGE}.child"

NAME = re.compile(r"(?<![\w./])evaluator(?:\.[A-Za-z_]\w*)+")
C_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
# Between adjacent C string literals: whitespace, // comments, /* */ comments.
C_GAP = re.compile(r"(?:\s|//[^\n]*\n|/\*.*?\*/)*", re.DOTALL)


def c_strings(text: str) -> list[str]:
    """The C/C++ string literals of `text`, adjacent ones joined (as the compiler joins them), escapes decoded."""
    out: list[str] = []
    pos = 0
    while (match := C_LITERAL.search(text, pos)) is not None:
        if text[max(0, match.start() - 1)] == "'":  # the character literal '"'
            pos = match.start() + 1
            continue
        pieces = [match.group(1)]
        end = match.end()
        while True:
            gap = C_GAP.match(text, end)
            following = C_LITERAL.match(text, gap.end()) if gap else None
            if following is None:
                break
            pieces.append(following.group(1))
            end = following.end()
        out.append("".join(decode_literal(f'"{piece}"') for piece in pieces))
        pos = end
    return out


def _folded(node: ast.AST) -> str | None:
    """A string expression made only of constants (`"a" + "b"`, `"".join(["a", "b"])`, f-strings of constants)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [_folded(v) for v in node.values]
        return "".join(p for p in parts if p is not None) if all(p is not None for p in parts) else None
    if isinstance(node, ast.FormattedValue):
        return _folded(node.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.List | ast.Tuple)
    ):
        sep, items = _folded(node.func.value), [_folded(e) for e in node.args[0].elts]
        if sep is not None and all(i is not None for i in items):
            return sep.join(i for i in items if i is not None)
    return None


def _pieces(node: ast.AST) -> list[ast.AST]:
    """The operands of a string-building expression (`+`, `.join([...])`, an f-string), else nothing."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [node.left, node.right]
    if isinstance(node, ast.JoinedStr):
        return list(node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("join", "format"):
        return [node.func.value, *node.args]
    return []


def python_strings(code: str) -> tuple[list[str], list[str]]:
    """(values, fragments) of Python source: every string constant or constant expression, folded; and the
    constant pieces of strings built at run time from something not constant (`"evaluator." + name`)."""
    values: list[str] = []
    fragments: list[str] = []

    def visit(node: ast.AST) -> None:
        value = _folded(node)
        if value is not None:
            values.append(value)
            return
        for piece in _pieces(node):
            constant = _folded(piece)
            if constant is not None:
                fragments.append(constant)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(code))
    return values, fragments


@functools.cache
def payload_strings(path: Path) -> tuple[list[str], list[str]]:
    """What a payload file says to the process it attacks: (strings, fragments of strings built at run time).
    A kernel's strings are its C literals, and the strings of those that are Python code (PyRun_SimpleString);
    a Triton file's are its Python strings and its code (for `import evaluator.x` and attribute chains)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".cu":
        values, fragments = python_strings(text)
        return [text, *values], fragments
    strings, fragments = [], []
    for literal in c_strings(text):
        strings.append(literal)
        try:
            values, built = python_strings(literal)
        except SyntaxError:
            continue
        strings += values
        fragments += built
    return strings, fragments


def module_file(dotted: str) -> Path | None:
    """The file of module `dotted` in this repository's evaluator, if there is one. Read from the tree, not from
    the import system: an installed or editable copy of another checkout may still hold a module moved here."""
    base = REPO.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def resolve(name: str) -> tuple[str, object]:
    """`evaluator.a.b.C.d` -> ("evaluator.a.b", the object C.d); AssertionError when it does not resolve."""
    parts = name.split(".")
    for end in range(len(parts), 1, -1):
        module_name = ".".join(parts[:end])
        path = module_file(module_name)
        if path is None:
            continue
        obj: object = importlib.import_module(module_name)
        assert Path(getattr(obj, "__file__", "")).resolve() == path.resolve(), f"{module_name}: imported another copy"
        for attr in parts[end:]:
            assert hasattr(obj, attr), f"{name}: {module_name} has no {'.'.join(parts[end:])}"
            obj = getattr(obj, attr)
        return module_name, obj
    raise AssertionError(f"{name}: no such module in {REPO / 'evaluator'}")


@functools.cache
def attacked_modules() -> frozenset[str]:
    return frozenset(loaded_by(set(ATTACKED_PROCESSES), import_edges()))


@functools.cache
def attacked_classes() -> frozenset[str]:
    """The names of the classes the attacked processes' evaluator modules define."""
    return frozenset(
        n for m in attacked_modules() for n, v in vars(importlib.import_module(m)).items() if isinstance(v, type)
    )


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO)) for p in paths]


def test_the_sources_are_read():
    names = {n for path in SOURCES for s in payload_strings(path)[0] for n in NAME.findall(s)}
    # the payloads this test exists for (if one is rewritten to reach its target another way, update the list)
    assert f"{CANDIDATE_PACKAGE}.timing" in names
    assert f"{CANDIDATE_PACKAGE}.timing.HostTimer.now" in names


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_every_evaluator_name_in_a_payload_resolves(path):
    text = path.read_text(encoding="utf-8")
    strings, fragments = payload_strings(path)
    for name in sorted({n for s in [text, *strings] for n in NAME.findall(s)}):  # comments included
        resolve(name)
    if path in RUNNERS:
        return
    loaded = attacked_modules()
    for name in sorted({n for s in strings for n in NAME.findall(s)}):
        module, _ = resolve(name)
        assert module in loaded, f"{path.name}: {module} is not loaded in the candidate process or the Triton compile"
    built = [f for f in fragments if "evaluator" in f or "__main__" in f]
    assert not built, f"{path.name}: a harness name built at run time from {built}: resolve it by hand, add it here"


# `t = sys.modules.get('evaluator.x')`, `sys.modules["evaluator.x"]`, `x = sys.modules['__main__'].Name`,
# `x = getattr(sys.modules["__main__"], "Name", None)`: the variable, the module, and the attribute taken.
BINDING = re.compile(
    r"(?P<var>\w+)\s*=\s*(?:[\w.]*\.)?sys\.modules(?:\.get\(\s*|\[\s*)['\"](?P<module>[\w.]+)['\"]\s*[\])]"
    r"(?:\.(?P<attr>\w+))?"
    r"|(?P<var2>\w+)\s*=\s*getattr\(\s*(?:[\w.]*\.)?sys\.modules\[\s*['\"](?P<module2>[\w.]+)['\"]\s*\]"
    r"\s*,\s*['\"](?P<attr2>\w+)['\"]"
)


def bindings(code: str) -> list[tuple[str, str, str | None]]:
    out = []
    for m in BINDING.finditer(code):
        if m.group("var"):
            out.append((m.group("var"), m.group("module"), m.group("attr")))
        else:
            out.append((m.group("var2"), m.group("module2"), m.group("attr2")))
    return out


PAYLOADS = [p for p in SOURCES if p not in RUNNERS]


@pytest.mark.parametrize("path", PAYLOADS, ids=_ids(PAYLOADS))
def test_every_attribute_a_payload_takes_from_a_harness_module_exists(path):
    for code in payload_strings(path)[0]:
        for var, module, attr in bindings(code):
            if not (module == "__main__" or module.startswith("evaluator")):
                continue
            target = MAIN if module == "__main__" else module
            _, obj = resolve(target + (f".{attr}" if attr else ""))
            # every use of the variable: `var.name(.name)*`, read or assigned; the payload's own markers (`_adv*`,
            # set by the payload to stay idempotent) excepted
            for use in re.finditer(rf"(?<![\w.]){re.escape(var)}((?:\.[A-Za-z_]\w*)+)", code):
                chain = use.group(1).split(".")[1:]
                current = obj
                for a in chain:
                    if a.startswith("_adv"):
                        break
                    assert hasattr(current, a), f"{path.name}: {var} ({target}) has no {'.'.join(chain)}"
                    current = getattr(current, a)


@pytest.mark.parametrize("path", PAYLOADS, ids=_ids(PAYLOADS))
def test_every_type_name_a_payload_scans_for_is_a_class_of_the_attacked_process(path):
    classes = attacked_classes()
    for code in payload_strings(path)[0]:
        for name in re.findall(r"__name__\s*==\s*['\"](\w+)['\"]", code):
            if name == "__main__" or hasattr(builtins, name):
                continue
            assert name in classes, f"{path.name}: no class named {name} in the candidate process's modules"


def test_the_harness_runs_as_the_module_the_payloads_take_for_main():
    from evaluator.measure.candidate import CHILD_MODULE

    assert CHILD_MODULE == MAIN
