"""One name per measurement from the evaluator to the API: the database columns, the ORM and every row
the code builds from them carry the verdict's names (`speedup_factor`, `speedup_ci95_low` / `_high`,
`fraction_of_peak`); version 1's names live only in portal/core/serializers.py (V1_NAMES, to_version) and in the
migrations that renamed the columns.

The source checks are narrow on purpose: a model board's `speedup` (the mean over runs of each run's best) and its
`speedup_ci_low` / `speedup_ci_high` are other measurements, and keep their names (docs/api.md)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
from django.apps import apps

from portal.core.serializers import MEASUREMENT_FIELDS, V1_NAMES, canonical_names, field_name, to_version
from portal.leaderboard.boards.ranking import KernelRow

REPO = Path(__file__).resolve().parents[2]
# speedup, speedup_ci_low, speedup_ci_high, peak_fraction: the renamed measurements (not a board row's `group`)
OLD = frozenset(V1_NAMES[k] for k in MEASUREMENT_FIELDS if k in V1_NAMES)
ALLOWED = {REPO / "portal/core/serializers.py"}  # the one table of version 1's names

# Queryset / model-manager methods and expressions whose string arguments and keywords are field paths.
ORM_CALLS = {
    "filter", "exclude", "values", "values_list", "order_by", "update", "create", "get_or_create",
    "update_or_create", "annotate", "aggregate", "only", "defer", "F", "Q", "Evaluation", "Turn",
}  # fmt: skip
# Names the code gives an Evaluation, a Turn or a kernel board row (never a model board row: `r`, `row`, `g`, `m`).
MEASURED = re.compile(r"(^|_)(evaluation|turn|latest|fixed|reference)s?$|^(e|t|ev)$")


def _python_sources() -> list[Path]:
    return [p for p in sorted((REPO / "portal").rglob("*.py")) if "migrations" not in p.parts and p not in ALLOWED]


def _head(path: str) -> str:
    """`-speedup__gte` -> `speedup`: the field a lookup starts from."""
    return path.lstrip("-").split("__")[0]


def _receiver(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def test_no_model_has_a_column_by_an_old_name():
    """Catches a migration or model that brings back `speedup`, `peak_fraction`, ... as a column."""
    found = {
        (model._meta.label, field.name)
        for config in apps.get_app_configs()
        if config.name.startswith("portal.")
        for model in config.get_models()
        for field in model._meta.get_fields()
        if field.name in OLD
    }
    assert not found, found
    evaluation = {f.name for f in apps.get_model("submissions", "Evaluation")._meta.get_fields()}
    assert {"speedup_factor", "speedup_ci95_low", "speedup_ci95_high", "fraction_of_peak"} <= evaluation
    assert "speedup_factor" in {f.name for f in apps.get_model("agent", "Turn")._meta.get_fields()}


def test_a_kernel_board_row_carries_the_measurement_by_the_canonical_names():
    """KernelRow and Evaluation are read by the same `measurement()`: both must carry the same attribute names."""
    fields = {f.name for f in dataclasses.fields(KernelRow)}
    assert not fields & OLD
    assert {"speedup_factor", "speedup_ci95_low", "speedup_ci95_high", "fraction_of_peak"} <= fields


def test_no_orm_lookup_or_measured_attribute_uses_an_old_name():
    """Catches `.filter(speedup__gte=...)`, `.values("peak_fraction")`, `order_by("-speedup")`, `F("speedup")`,
    `Evaluation(speedup=...)`, `out.update(speedup=...)` on a row of columns, and `evaluation.speedup` /
    `turn.speedup` attribute reads anywhere in portal/ outside the serializer."""
    problems = []
    for path in _python_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(REPO)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name not in ORM_CALLS:
                    continue
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _head(arg.value) in OLD:
                        problems.append(f"{where}:{node.lineno} {name}({arg.value!r})")
                for keyword in node.keywords:
                    if keyword.arg and _head(keyword.arg) in OLD:
                        problems.append(f"{where}:{node.lineno} {name}({keyword.arg}=...)")
            elif isinstance(node, ast.Attribute) and node.attr in OLD and MEASURED.search(_receiver(node.value)):
                problems.append(f"{where}:{node.lineno} {_receiver(node.value)}.{node.attr}")
    assert not problems, "old measurement names in the ORM or on measured rows:\n" + "\n".join(problems)


def test_the_checks_above_see_what_they_look_for():
    """The source check must flag the patterns it is meant to catch (and not a model board row's `speedup`)."""
    source = (
        "Evaluation.objects.filter(speedup__gte=1).order_by('-speedup').values('peak_fraction')\n"
        "Turn(speedup_ci_low=1)\nturn.speedup\nevaluation.peak_fraction\nrow.speedup\ngroup.speedup_ci_low\n"
    )
    tree = ast.parse(source)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    flagged_args = [
        a.value for c in calls for a in c.args if isinstance(a, ast.Constant) and _head(str(a.value)) in OLD
    ]
    flagged_keywords = [k.arg for c in calls for k in c.keywords if k.arg and _head(k.arg) in OLD]
    attributes = [
        f"{_receiver(n.value)}.{n.attr}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and n.attr in OLD and MEASURED.search(_receiver(n.value))
    ]
    assert sorted(flagged_args) == ["-speedup", "peak_fraction"]
    assert sorted(flagged_keywords) == ["speedup__gte", "speedup_ci_low"]
    assert sorted(attributes) == ["evaluation.peak_fraction", "turn.speedup"]


TEMPLATE_READ = re.compile(
    r"\b(evaluation|latest|turn|e|t|b\.row|data\.a|data\.b|w\.a|w\.b)\.(speedup|speedup_ci_low|speedup_ci_high)\b"
)


def test_templates_and_scripts_read_the_canonical_names():
    """Catches a template reading `evaluation.speedup` (Django renders a missing attribute as "": the page would
    silently show nothing), and `peak_fraction`, which names nothing else, anywhere in templates or static JS."""
    problems = []
    for path in sorted([*(REPO / "templates").rglob("*.html"), *(REPO / "static").rglob("*.js")]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TEMPLATE_READ.search(line) or "peak_fraction" in line:
                problems.append(f"{path.relative_to(REPO)}:{number}")
    assert not problems, problems


def test_peak_fraction_is_named_only_in_the_serializer():
    """`peak_fraction` never meant anything but version 1's name of `fraction_of_peak`."""
    found = [str(p.relative_to(REPO)) for p in _python_sources() if "peak_fraction" in p.read_text(encoding="utf-8")]
    assert not found, found


@pytest.mark.parametrize("canonical", ["speedup_factor", "speedup_ci95_low", "speedup_ci95_high", "fraction_of_peak"])
def test_versions_and_reading_old_files_back(canonical):
    """One table for both directions: version 1's name out (`to_version`, `field_name`), and back in
    (`canonical_names`, for files published in version 1 formats)."""
    assert canonical in MEASUREMENT_FIELDS
    old = V1_NAMES[canonical]
    assert field_name(canonical, 1) == old and field_name(canonical, 2) == canonical
    assert to_version({canonical: 1.5, "tflops": 2.0}, 1) == {old: 1.5, "tflops": 2.0}
    assert canonical_names({old: 1.5, "tflops": 2.0}) == {canonical: 1.5, "tflops": 2.0}
    assert canonical_names({canonical: 1.5}) == {canonical: 1.5}  # a new file reads as it is
