"""Which evaluator modules import which, read with `ast` (nothing is imported): the trust-layout tests' one parser.

Every import counts: module level, inside functions, and under `if TYPE_CHECKING:` (flagged, so that a caller can
leave those out when it asks what a process loads at run time). `from pkg import name` counts as an import of
`pkg.name` when that is a module, of `pkg` otherwise; relative imports are resolved against the importing module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EVALUATOR = REPO / "evaluator"
CANDIDATE_PACKAGE = "evaluator.candidate_process"
SHARED_PACKAGE = "evaluator.both_sides"


@dataclass(frozen=True)
class Edge:
    importer: str  # dotted module name
    imported: str  # dotted module name (a module of the package, the longest one that the import names)
    line: int
    type_checking: bool  # under `if TYPE_CHECKING:` (never runs)


def module_name(path: Path, root: Path) -> str:
    """`root/evaluator/a/b.py` -> "evaluator.a.b"; a package's `__init__.py` -> the package's name."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package under `package_dir` (subpackages included), by dotted name."""
    root = package_dir.parent
    return {module_name(p, root): p for p in sorted(package_dir.rglob("*.py"))}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def edges(path: Path, name: str, known: set[str]) -> list[Edge]:
    """The imports of modules in `known` that the module `name` (source at `path`) makes."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Edge] = []

    def resolve(candidate: str, line: int, type_checking: bool) -> None:
        parts = candidate.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            if prefix in known:
                if prefix != name:
                    found.append(Edge(name, prefix, line, type_checking))
                return

    def visit(node: ast.AST, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child):
                for inner in child.body:
                    visit_one(inner, True)
                for inner in child.orelse:
                    visit_one(inner, type_checking)
                continue
            visit_one(child, type_checking)

    def visit_one(child: ast.AST, type_checking: bool) -> None:
        if isinstance(child, ast.Import):
            for alias in child.names:
                resolve(alias.name, child.lineno, type_checking)
        elif isinstance(child, ast.ImportFrom):
            if child.level:
                base = package.split(".")[: len(package.split(".")) - child.level + 1]
                source = ".".join([*base, *([child.module] if child.module else [])])
            else:
                source = child.module or ""
            for alias in child.names:
                resolve(f"{source}.{alias.name}", child.lineno, type_checking)
        visit(child, type_checking)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), False)
    return found


def import_edges(package_dir: Path = EVALUATOR) -> list[Edge]:
    """Every import between modules of the package under `package_dir`."""
    modules = package_modules(package_dir)
    known = set(modules)
    return [e for name, path in modules.items() for e in edges(path, name, known)]


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def loaded_by(starts: set[str], all_edges: list[Edge]) -> set[str]:
    """The modules a process that imports `starts` loads at run time: their transitive imports (run-time imports
    only: function-level ones count, `if TYPE_CHECKING:` ones do not), each module's parent packages included."""
    graph: dict[str, set[str]] = {}
    for e in all_edges:
        if not e.type_checking:
            graph.setdefault(e.importer, set()).add(e.imported)
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:end]) for end in range(1, len(parts))]  # importing a.b.c runs a and a.b first
        todo += sorted(graph.get(module, ()))
    return seen


def trust_violations(package_dir: Path, candidate_package: str, shared_package: str) -> list[str]:
    """The layout rules, as messages (empty: the layout holds):
    (a) no module outside `candidate_package` imports from it, not even under TYPE_CHECKING or in a function;
    (b) modules inside it import, from the rest of the package, only modules of `shared_package`;
    (c) modules of `shared_package` import only each other (what they import runs on the candidate side too)."""
    out = []
    for e in import_edges(package_dir):
        inside_importer = in_package(e.importer, candidate_package)
        inside_imported = in_package(e.imported, candidate_package)
        shared_importer = in_package(e.importer, shared_package)
        shared_imported = in_package(e.imported, shared_package) and e.imported != shared_package
        if not inside_importer and inside_imported:
            out.append(f"{e.importer}:{e.line} imports {e.imported} (the trusted side imports candidate-process code)")
        elif inside_importer and not inside_imported and not shared_imported:
            out.append(f"{e.importer}:{e.line} imports {e.imported}, which is not in {shared_package}")
        elif shared_importer and not shared_imported:
            out.append(f"{e.importer}:{e.line} imports {e.imported}: {shared_package} imports only its own modules")
    return out
