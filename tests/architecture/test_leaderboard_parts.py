"""The leaderboard app is split by what it serves (docs/architecture.md, "The leaderboard's parts"):
`boards/`, `charts/`, `compare/` and `evidence/`, on a base of the app's root modules (the results generation, its
shared store and signals, the reference-verdict import, the download response). Read from the source with `ast`,
nothing imported: every import at any depth counts (inside functions, under `if TYPE_CHECKING:`, relative ones).

- The base imports no part: the parts build on it, never the other way.
- A part's reads (every module but `views.py` and `api.py`) import only the parts below them: boards < charts <
  compare, and evidence beside charts on the boards' floor, importing no part. So charts and compare never import
  evidence, evidence never imports charts or compare, and the boards' reads import no other part.
- A part's views and API import its own reads, the reads those may import, and the boards' (query parsing, whether
  model runs are on); the board pages also the charts', since they draw them.
- Nothing imports a views or api module but the URL confs, and nothing imports the wiring (`urls.py`,
  `api_urls.py`, `apps.py`, the management commands), which may import every part."""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.import_names import imported_names, module_parts
from tests.support.package_trees import write_package_tree

REPO = Path(__file__).resolve().parents[2]
APP = ("portal", "leaderboard")

PARTS = ("boards", "charts", "compare", "evidence")
# The other parts each part's reads may import.
READS_MAY_IMPORT: dict[str, frozenset[str]] = {
    "boards": frozenset(),
    "charts": frozenset({"boards"}),
    "compare": frozenset({"boards", "charts"}),
    "evidence": frozenset(),
}
# The other parts each part's views and API may import besides those: the boards' reads (every page and endpoint
# parses a board query or asks whether model runs are on); the board pages draw the charts.
HTTP_MAY_IMPORT: dict[str, frozenset[str]] = {
    "boards": frozenset({"charts"}),
    "charts": frozenset({"boards"}),
    "compare": frozenset({"boards"}),
    "evidence": frozenset({"boards"}),
}
HTTP = frozenset({"views", "api"})  # a part's module names that serve requests
WIRING = frozenset({"urls", "api_urls", "apps", "management"})  # root names that may import any part
BASE, WIRED = "base", "wiring"


@dataclass(frozen=True)
class Place:
    """Where a module lies in the app: its part (a sub-package, BASE or WIRED) and whether it serves requests."""

    part: str
    http: bool = False

    def __str__(self) -> str:
        if self.part in PARTS:
            return f"{self.part} {'views/api' if self.http else 'reads'}"
        return self.part


def place(parts: list[str]) -> Place | None:
    """The place of a module named by its dotted parts under portal.leaderboard (a package, a module, or a name in
    one); None for migrations."""
    if not parts:
        return Place(BASE)  # the app package itself
    if parts[0] == "migrations":
        return None
    if parts[0] in PARTS:
        return Place(parts[0], http=len(parts) > 1 and parts[1] in HTTP)
    return Place(WIRED if parts[0] in WIRING else BASE)


def _allowed(source: Place, target: Place) -> bool:
    if source.part == WIRED:
        return True
    if target.part == WIRED or target.http:
        return False
    if source.part == BASE:
        return target.part == BASE
    allowed = {BASE, source.part} | READS_MAY_IMPORT[source.part]
    if source.http:
        allowed |= HTTP_MAY_IMPORT[source.part]
    return target.part in allowed


def crossings(root: Path) -> list[str]:
    """Each place under root/portal/leaderboard where a module imports what its place may not, as
    "path:line: source -> target (the import)"; then each sub-package that is no part."""
    app = root.joinpath(*APP)
    problems: list[str] = []
    for path in sorted(app.rglob("*.py")):
        source = place(module_parts(path, app))
        if source is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            seen: set[str] = set()
            for name in imported_names(node, path, root):
                dotted = name.split(".")
                if tuple(dotted[: len(APP)]) != APP:
                    continue
                target = place(dotted[len(APP) :])
                if target is None or _allowed(source, target) or str(target) in seen:
                    continue
                seen.add(str(target))
                problems.append(f"{path.relative_to(root)}:{node.lineno}: {source} -> {target} ({ast.unparse(node)})")
    packages = {p.parent.name for p in app.glob("*/__init__.py")} - {"migrations", "management"}
    problems += [
        f"{'/'.join(APP)}/{name}: a sub-package that is no part: add it to PARTS"
        for name in sorted(packages - set(PARTS))
    ]
    return problems


# --------------------------------------------------------------------------- the leaderboard


def test_each_part_of_the_leaderboard_imports_only_what_its_place_allows():
    problems = crossings(REPO)
    assert not problems, "imports across the leaderboard's parts that the split forbids:\n" + "\n".join(problems)


def test_the_parts_are_the_apps_sub_packages():
    app = REPO.joinpath(*APP)
    assert {p.parent.name for p in app.glob("*/__init__.py")} - {"migrations", "management"} == set(PARTS)


def test_the_walk_reads_the_real_app(tmp_path):
    """The check is not vacuous: the app as it is passes, and the same app with one chart module reaching into the
    evidence fails, with that line named."""
    shutil.copytree(REPO.joinpath(*APP), tmp_path.joinpath(*APP), ignore=shutil.ignore_patterns("__pycache__"))
    assert crossings(tmp_path) == []
    path = tmp_path.joinpath(*APP, "charts", "model_charts.py")
    path.write_text(
        path.read_text(encoding="utf-8") + "\n\ndef f():\n    from portal.leaderboard.evidence import downloads\n"
    )
    problems = crossings(tmp_path)
    assert len(problems) == 1 and "portal/leaderboard/charts/model_charts.py" in problems[0], problems
    assert "charts reads -> evidence reads" in problems[0]


# The classes whose pickles the shared store holds, where they live at cache.STORE_FORMAT.
STORED_CLASSES = {
    "KernelRow": "portal.leaderboard.boards.ranking",
    "ModelRow": "portal.leaderboard.boards.ranking",
    "SummaryRow": "portal.leaderboard.boards.ranking",
    "TrajectoryTurns": "portal.leaderboard.charts.turns",
}


def test_the_store_format_says_where_the_stored_classes_live():
    """A pickle names its class's module: moving one of these without raising cache.STORE_FORMAT (and this table)
    would have every process read pickles, stored before the move, that name a module its code no longer has."""
    from portal.leaderboard import cache
    from portal.leaderboard.boards.ranking import KernelRow, ModelRow, SummaryRow
    from portal.leaderboard.charts.turns import TrajectoryTurns

    assert cache.STORE_FORMAT == 2
    assert {c.__name__: c.__module__ for c in (KernelRow, ModelRow, SummaryRow, TrajectoryTurns)} == STORED_CLASSES
    assert f":v{cache.STORE_FORMAT}:" in cache.entry_name(cache.KERNELS, "token", ("key",))


# --------------------------------------------------------------------------- the checker, on made-up trees


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    write_package_tree(tmp_path, files)
    for part in PARTS:  # every part exists, as in the app
        (tmp_path / "portal" / "leaderboard" / part).mkdir(parents=True, exist_ok=True)
        (tmp_path / "portal" / "leaderboard" / part / "__init__.py").touch()
    return tmp_path


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("portal/leaderboard/charts/figures.py", "from portal.leaderboard.evidence import downloads\n"),
        (
            "portal/leaderboard/compare/selectors.py",
            "def f():\n    from portal.leaderboard.evidence.selectors import artifact_bytes\n",
        ),
        ("portal/leaderboard/evidence/selectors.py", "from portal.leaderboard.charts.figures import model_color\n"),
        ("portal/leaderboard/boards/selectors.py", "from portal.leaderboard.charts import turns\n"),
        ("portal/leaderboard/charts/selectors.py", "from portal.leaderboard.boards.views import MODEL_CHARTS\n"),
        ("portal/leaderboard/boards/api.py", "from portal.leaderboard.boards import views\n"),
        ("portal/leaderboard/cache.py", "from portal.leaderboard.boards.ranking import KernelRow\n"),
        ("portal/leaderboard/evidence/views.py", "from portal.leaderboard.compare.selectors import compare_kernels\n"),
        ("portal/leaderboard/compare/views.py", "from portal.leaderboard import urls\n"),
        ("portal/leaderboard/charts/turns.py", "from ..evidence import selectors\n"),
        (
            "portal/leaderboard/compare/figures.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import portal.leaderboard.evidence.downloads\n",
        ),
    ],
    ids=[
        "charts-import-evidence",
        "compare-imports-evidence-in-a-function",
        "evidence-imports-charts",
        "boards-reads-import-charts",
        "reads-import-another-parts-views",
        "api-imports-views",
        "base-imports-a-part",
        "evidence-views-import-compare",
        "a-view-imports-the-url-conf",
        "relative-import-across",
        "type-checking-import",
    ],
)
def test_the_checker_refuses_each_crossing(tmp_path, where, source):
    root = _tree(tmp_path, {where: source})
    problems = crossings(root)
    assert len(problems) == 1 and problems[0].startswith(f"{where}:"), problems


def test_the_checker_asks_for_the_place_of_a_new_part(tmp_path):
    root = _tree(tmp_path, {"portal/leaderboard/exports/selectors.py": "from portal.leaderboard import cache\n"})
    assert crossings(root) == ["portal/leaderboard/exports: a sub-package that is no part: add it to PARTS"]


def test_the_checker_lets_each_part_import_what_it_builds_on(tmp_path):
    root = _tree(
        tmp_path,
        {
            "portal/leaderboard/urls.py": (
                "from portal.leaderboard.boards import views as boards\n"
                "from portal.leaderboard.compare import views as compare\n"
                "from portal.leaderboard.evidence import views as evidence\n"
            ),
            "portal/leaderboard/cache.py": "from portal.leaderboard.models import LeaderboardVersion\n",
            "portal/leaderboard/boards/selectors.py": (
                "from portal.leaderboard.boards import ranking\nfrom portal.leaderboard.cache import Generation\n"
            ),
            "portal/leaderboard/boards/views.py": "from portal.leaderboard.charts import selectors as charts\n",
            "portal/leaderboard/charts/model_charts.py": "from portal.leaderboard.boards import ranking, selectors\n",
            "portal/leaderboard/charts/api.py": "from portal.leaderboard.boards.serializers import query_entry\n",
            "portal/leaderboard/compare/selectors.py": "from portal.leaderboard.charts.figures import figure_json\n",
            "portal/leaderboard/evidence/api.py": (
                "from portal.leaderboard.boards import selectors as boards\n"
                "from portal.leaderboard.evidence.selectors import traces_jsonl\n"
                "from portal.leaderboard.attachments import attachment\n"
            ),
            "portal/leaderboard/management/commands/seed.py": "from portal.leaderboard.boards import ranking\n",
            "portal/leaderboard/migrations/0001_initial.py": "from portal.leaderboard.boards import views\n",
            "portal/leaderboard/charts/figures.py": "from portal.core import serializers\nimport plotly\n",
        },
    )
    assert crossings(root) == []
