"""No import cycles among the portal's modules, read from the source with `ast` (nothing is imported).

The module-level graph (imports that run when a module is loaded; `if TYPE_CHECKING:` blocks left out) must be
free of cycles. A cycle "broken" by moving one import into a function is still a cycle in the design, so the
graph of every import, at any depth, is checked too, and two rules on it: an app's `queueing` never imports its
`jobs` (jobs are enqueued by dotted path), and `portal.submissions` never imports `portal.agent`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("portal",)

# Cycles that exist on purpose, each with its reason (none today); the test fails when one disappears, so the list stays true.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "migrations" not in path.parts:
                found[module_name(path)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.Module, *, module_level: bool):
    """Import statements; with module_level, only those that run on import (not in functions or classes)."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif module_level and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        elif module_level and isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
        else:
            pending.extend(ast.iter_child_nodes(node))


def imported_modules(name: str, path: Path, known: set[str], *, module_level: bool = True) -> set[str]:
    """The known modules that importing `name` loads: each target and the packages above it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _import_nodes(tree, module_level=module_level):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        if node.level:
            base = name.split(".")
            base = base if is_package else base[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        targets.add(prefix)
        targets.update(f"{prefix}.{alias.name}" for alias in node.names)  # `from pkg import module`
    loaded = set()
    for target in targets:
        parts = target.split(".")
        loaded.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {m for m in loaded if m in known and m != name}


def import_graph(*, module_level: bool = True) -> dict[str, set[str]]:
    modules = all_modules()
    known = set(modules)
    return {name: imported_modules(name, path, known, module_level=module_level) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan), i.e. every group of modules in a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative: no recursion limit on deep graphs
        nonlocal counter
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_cycle_and_its_members():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_relative_and_from_imports(tmp_path):
    known = {"portal.x", "portal.x.jobs", "portal.x.services", "portal"}
    source = tmp_path / "queueing.py"
    source.write_text(
        "from . import jobs\nfrom .services import thing\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import portal.y\ndef f():\n    import portal.x.late\n"
    )
    assert imported_modules("portal.x.queueing", source, known) == {
        "portal",
        "portal.x",
        "portal.x.jobs",
        "portal.x.services",
    }


@pytest.mark.parametrize("module_level", [True, False], ids=["module-level", "any-depth"])
def test_no_import_cycle_among_portal_modules(module_level):
    graph = import_graph(module_level=module_level)
    assert "portal.submissions.services" in graph and "portal.agent.jobs" in graph  # the walk found the apps
    found = {component: KNOWN_CYCLES.get(component, "unknown") for component in cycles(graph)}
    unknown = [sorted(c) for c, reason in found.items() if reason == "unknown"]
    assert not unknown, f"import cycles among portal modules: {unknown}"
    assert set(found) == set(KNOWN_CYCLES), "a known cycle is gone: take it off KNOWN_CYCLES"


@pytest.mark.parametrize("module_level", [True, False], ids=["module-level", "any-depth"])
def test_services_queueing_jobs_of_each_app_form_no_cycle(module_level):
    graph = import_graph(module_level=module_level)
    in_cycles = set().union(*cycles(graph)) if cycles(graph) else set()
    for app in ("submissions", "agent"):
        for part in ("services", "queueing", "jobs"):
            assert f"portal.{app}.{part}" not in in_cycles


def test_queueing_never_imports_its_jobs_and_submissions_never_imports_agent():
    graph = import_graph(module_level=False)  # every import, also those inside functions
    for app in ("submissions", "agent"):
        assert f"portal.{app}.jobs" not in graph[f"portal.{app}.queueing"]
    offenders = {m: sorted(t for t in targets if t.startswith("portal.agent")) for m, targets in graph.items()}
    offenders = {m: t for m, t in offenders.items() if m.startswith("portal.submissions") and t}
    assert not offenders, f"portal.submissions imports portal.agent: {offenders}"
