"""The portal's apps are floors: an app imports only itself and the apps below it, `core` at the bottom (the order is
LAYERS; docs/architecture.md, "Import direction"). Read from the source with `ast`, nothing imported: every import
at any depth counts (inside functions, under `if TYPE_CHECKING:`, relative ones), and so do the app labels named by
migration dependencies and by lazy model references ("agent.Turn"). `tests/architecture/test_import_cycles_portal.py` checks
modules for cycles; this checks apps, where a cycle can hide in imports that are each one way between modules.

An app that needs something from an app above it does not import it: the app above registers it in its
AppConfig.ready() (hiding rules in `portal.core.visibility`, the demo banner's checks in
`portal.core.context_processors`, task page panels in `portal.catalog.task_panels`), or the code moves down to the
app that owns its words (`portal.core.verdicts`), or up to `ops`, which may import every app."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.import_names import imported_names
from tests.support.package_trees import write_package_tree

REPO = Path(__file__).resolve().parents[2]

# Bottom to top. Each app may import the apps before it, never one after it.
LAYERS = ("core", "accounts", "catalog", "submissions", "agent", "leaderboard", "datasets", "fixit", "ops")
# Modules of the project, not apps. Below every app: settings helpers any app may import; they import no app.
FOUNDATION = frozenset({"env", "dev_secrets"})
# Above every app: they may import any app, and no app imports them (apps read django.conf.settings).
ROOF = frozenset({"settings", "urls", "wsgi", "__init__"})

_RELATIONS = frozenset({"ForeignKey", "OneToOneField", "ManyToManyField"})
_MODEL_LABEL = re.compile(r"^([a-z_]+)\.[A-Z]\w*$")


@dataclass(frozen=True)
class Reference:
    """One place where a module of `app` names `target` (an app, a foundation or roof module of the project)."""

    path: Path
    line: int
    app: str
    target: str
    how: str  # the import or the string, as written

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.app} -> {self.target} ({self.how})"


def _owner(path: Path, root: Path) -> str:
    """The app a file belongs to (its first folder under portal/), or its own name for the project's modules."""
    parts = path.relative_to(root / "portal").parts
    return parts[0] if len(parts) > 1 else Path(parts[0]).stem


def _portal_target(name: str) -> str | None:
    """The app or project module a dotted name lies in, None outside the portal (or the portal package itself)."""
    parts = name.split(".")
    return parts[1] if parts[0] == "portal" and len(parts) > 1 else None


def references(path: Path, root: Path) -> list[Reference]:
    """Every other app or project module this file depends on: imports at any depth, migration dependencies
    ("catalog", "0001_initial"), lazy model references ("agent.Turn") in relation fields."""
    app = _owner(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict[tuple[int, str], Reference] = {}

    def add(line: int, target: str | None, how: str) -> None:
        if target and target != app:
            found.setdefault((line, target), Reference(path.relative_to(root), line, app, target, how))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for name in imported_names(node, path, root):
                add(node.lineno, _portal_target(name), ast.unparse(node))
        elif isinstance(node, ast.Assign) and "migrations" in path.parts:
            if any(isinstance(t, ast.Name) and t.id == "dependencies" for t in node.targets):
                for item in getattr(node.value, "elts", []):
                    if isinstance(item, ast.Tuple) and item.elts and isinstance(item.elts[0], ast.Constant):
                        add(item.lineno, str(item.elts[0].value), ast.unparse(item))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in _RELATIONS:
            for arg in [*node.args[:1], *(k.value for k in node.keywords if k.arg == "to")]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    match = _MODEL_LABEL.match(arg.value)
                    if match:
                        add(arg.lineno, match.group(1), repr(arg.value))
    return sorted(found.values(), key=lambda r: r.line)


def floor_of(name: str, layers: tuple[str, ...] = LAYERS) -> int | None:
    """-1 for the foundation, the app's index in `layers`, len(layers) for the roof; None for anything else."""
    if name in FOUNDATION:
        return -1
    if name in ROOF:
        return len(layers)
    return layers.index(name) if name in layers else None


def upward_references(root: Path, layers: tuple[str, ...] = LAYERS) -> list[str]:
    """Each place under root/portal where an app names an app above it (or the roof, or a name of no floor), as
    "path:line: app -> target (the import)"; then each app or project module that has no floor."""
    problems: list[str] = []
    unplaced: set[str] = set()
    for path in sorted((root / "portal").rglob("*.py")):
        app = _owner(path, root)
        floor = floor_of(app, layers)
        if floor is None:
            unplaced.add(app)
            continue
        for ref in references(path, root):
            target_floor = floor_of(ref.target, layers)
            if target_floor is None or target_floor > floor:
                problems.append(str(ref))
    problems += [f"portal/{app}: '{app}' has no floor: add it to LAYERS" for app in sorted(unplaced)]
    return problems


# --------------------------------------------------------------------------- the portal


def test_no_portal_app_imports_an_app_above_it():
    problems = upward_references(REPO)
    assert not problems, (
        "apps that reach above their floor (LAYERS, bottom to top: "
        + " < ".join(LAYERS)
        + "):\n"
        + ("\n".join(problems))
    )


def test_every_installed_portal_app_has_a_floor():
    from django.conf import settings

    installed = {name.split(".")[1] for name in settings.INSTALLED_APPS if name.startswith("portal.")}
    packages = {p.parent.name for p in (REPO / "portal").glob("*/__init__.py")}
    assert installed == packages == set(LAYERS)


def test_the_walk_sees_the_apps_and_their_downward_imports():
    """The check is not vacuous: the references it reads include known downward ones."""
    refs = [str(r) for r in references(REPO / "portal" / "leaderboard" / "boards" / "selectors.py", REPO)]
    assert any("leaderboard -> submissions" in r for r in refs)
    assert any("leaderboard -> agent" in r and "from portal.agent.models import" in r for r in refs)  # in a function
    fixit = [str(r) for r in references(REPO / "portal" / "fixit" / "models.py", REPO)]
    assert any("fixit -> agent ('agent.Turn')" in r for r in fixit)


# --------------------------------------------------------------------------- the checker, on made-up trees


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    return write_package_tree(tmp_path, {"portal/__init__.py": "", **files})


def test_the_checker_names_an_upward_import_inside_a_function_with_its_line(tmp_path):
    root = _tree(
        tmp_path,
        {
            "portal/core/templatetags/portal_tags.py": (
                "from portal.core import numbers\n\ndef verdict_phrase(obj):\n"
                "    from portal.leaderboard import ranking\n    return ranking.verdict_phrase(obj)\n"
            ),
            "portal/leaderboard/ranking.py": "from portal.core.verdicts import verdict_phrase\n",
        },
    )
    assert upward_references(root) == [
        "portal/core/templatetags/portal_tags.py:4: core -> leaderboard (from portal.leaderboard import ranking)"
    ]


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("portal/core/serializers.py", "from portal.leaderboard import ranking\n"),
        ("portal/core/visibility.py", "import portal.agent.models\n"),
        ("portal/core/context_processors.py", "from portal import submissions\n"),
        ("portal/core/management/commands/reconcile.py", "from ....agent.services import agent_reconcile\n"),
        (
            "portal/catalog/views.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import portal.leaderboard\n",
        ),
        ("portal/submissions/models.py", "class M:\n    run = models.ForeignKey('agent.ModelRun', on_delete=None)\n"),
        ("portal/submissions/migrations/0009_x.py", "dependencies = [('agent', '0001_initial')]\n"),
        ("portal/agent/views.py", "from portal.urls import urlpatterns\n"),
        ("portal/env.py", "from portal.core import api\n"),
    ],
    ids=[
        "core-imports-leaderboard",
        "core-imports-agent",
        "from-portal-import-app",
        "relative-import-up",
        "type-checking-import",
        "lazy-model-reference",
        "migration-dependency",
        "app-imports-the-roof",
        "foundation-imports-an-app",
    ],
)
def test_the_checker_refuses_each_way_of_reaching_up(tmp_path, where, source):
    root = _tree(tmp_path, {where: source})
    problems = upward_references(root)
    assert len(problems) == 1 and problems[0].startswith(where), problems


def test_the_checker_asks_for_the_floor_of_a_new_app(tmp_path):
    root = _tree(tmp_path, {"portal/newapp/views.py": "from portal.core import api\n"})
    assert upward_references(root) == ["portal/newapp: 'newapp' has no floor: add it to LAYERS"]


def test_the_checker_lets_apps_import_down_and_the_roof_import_anything(tmp_path):
    root = _tree(
        tmp_path,
        {
            "portal/leaderboard/selectors.py": (
                "from portal.core import serializers\nfrom ..submissions.models import Evaluation\n"
                "def f():\n    from portal.agent.models import Turn\n"
            ),
            "portal/fixit/models.py": "x = models.ForeignKey('agent.Turn', on_delete=None)\n",
            "portal/agent/migrations/0001_initial.py": (
                "dependencies = [('submissions', '0001_initial'), migrations.swappable_dependency(settings.X)]\n"
            ),
            "portal/agent/crypto.py": "from portal.dev_secrets import stored_secret\n",
            "portal/ops/management/commands/reconcile.py": "from portal.fixit.reasoning import explanations_reconcile\n",
            "portal/urls.py": "from portal.ops import apps\nfrom portal.catalog import views\n",
            "portal/settings.py": "from portal.env import env_str\n",
        },
    )
    assert upward_references(root) == []
