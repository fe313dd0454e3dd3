"""The demo leaderboard for tests that read it. `seed_leaderboard --demo` runs for real once in a test session
(about 2.5 s, most of it Django's insert path) and leaves the rows it added in a file the test processes share;
later calls copy those rows into the database with plain inserts (a few tenths of a second): integer keys moved
past the rows already there, UUID keys kept, the tasks they point at found again by slug.
`tests/leaderboard/test_demo_data.py` holds the copy to the command: from the same start the whole database after
either is the same. A seed whose rows cannot be copied this way (a key to a row the copy cannot find again, a key
already taken, another database than SQLite) is run for real."""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

from django.apps import apps
from django.core.management import call_command
from django.db import connection, models, transaction

INTEGER_KEYS = {"AutoField", "BigAutoField", "SmallAutoField"}


@dataclass(frozen=True)
class TableRows:
    """The rows the seed added to one table, every column as stored, the key first. A table with an integer key:
    its rows are those above `base`, the largest key before the seed, and a copy moves them past the largest key
    there is then. A table keyed otherwise (random UUIDs): its rows are the keys in `keys`, copied unchanged."""

    model: type[models.Model]
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    base: int | None
    keys: frozenset[Any] | None

    def added(self, key: Any) -> bool:
        return key > self.base if self.base is not None else key in (self.keys or ())


@dataclass(frozen=True)
class SeedRows:
    tables: tuple[TableRows, ...]
    found_by: dict[tuple[type[models.Model], Any], tuple[str, Any]]  # a key outside the seed -> (unique field, value)


def seed_demo(shared: Path) -> None:
    """What `seed_leaderboard --demo` leaves in the database: copied from the rows kept in `shared` by the first
    seed of the session, else seeded now (and kept there)."""
    from portal.catalog.models import Task
    from tests.support.factories import sync_catalog

    if not Task.objects.filter(is_active=True).exists():
        sync_catalog()  # the command syncs the catalog first where there is none: the copy's rows are the seed's own
    try:
        kept = pickle.loads(shared.read_bytes())  # noqa: S301 - written by this session's test processes only
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
        kept = None
    if isinstance(kept, SeedRows) and replay(kept):
        return
    captured = seed_and_capture()
    if captured is not None:
        keep(shared, captured)


def keep(shared: Path, captured: SeedRows) -> None:
    """Leave the rows where the session's other seeds will copy them from."""
    partial = shared.with_name(f"{shared.name}.{os.getpid()}")
    partial.write_bytes(pickle.dumps(captured))
    os.replace(partial, shared)  # another process reads the whole file or none of it


def seed_and_capture() -> SeedRows | None:
    """Run the command and keep the rows it added; None where they could not be copied back."""
    from portal.catalog.models import Task

    catalog = Task.objects.filter(is_active=True).exists()
    before = {model: _largest_key(model) if _integer_key(model) else _keys(model) for model in _models()}
    call_command("seed_leaderboard", "--demo", stdout=StringIO())
    if connection.vendor != "sqlite" or not catalog:  # without a catalog the command synced one: not the seed's rows
        return None
    tables = []
    for model, was in before.items():
        if model is _versions_model():  # the seed's last step, which a copy repeats rather than copies
            continue
        columns = tuple(f.column for f in _fields(model))
        if isinstance(was, int):
            rows, keys = _rows(model, columns, above=was), None
        else:
            rows = [row for row in _rows(model, columns) if row[0] not in was]
            keys = frozenset(row[0] for row in rows)
        if rows:
            tables.append(TableRows(model, columns, tuple(rows), was if keys is None else None, keys))
    found_by = _outside_keys(tables)
    return None if found_by is None else SeedRows(tuple(tables), found_by)


def replay(seed: SeedRows) -> bool:
    """Insert the captured rows again, integer keys moved past what the tables hold now. False (nothing written)
    where a row points at something this database does not have, or a kept key is taken."""
    if connection.vendor != "sqlite":
        return False
    seeded = {t.model: t for t in seed.tables}
    for table in seed.tables:
        if table.keys and table.model._default_manager.filter(pk__in=table.keys).exists():
            return False
    largest = {t.model: _largest_key(t.model) for t in seed.tables if t.base is not None}
    lookup: dict[tuple[type[models.Model], Any], Any] = {}
    for (target, old), (field, value) in seed.found_by.items():
        found = target._default_manager.filter(**{field: value}).values_list("pk", flat=True).first()
        if found is None:
            return False
        lookup[target, old] = found

    def moved(target: type[models.Model], value: Any) -> Any:
        if value is None:
            return None
        table = seeded.get(target)
        if table is None or not table.added(value):
            return lookup[target, value]  # a row the seed did not add
        return value if table.base is None else value - table.base + largest[target]

    with transaction.atomic(), connection.cursor() as cursor:
        for table in seed.tables:
            targets = [_target(table.model, column) for column in table.columns]
            rows = [
                tuple(
                    value if target is None else moved(target, value)
                    for target, value in zip(targets, row, strict=True)
                )
                for row in table.rows
            ]
            names = ", ".join(_q(c) for c in table.columns)
            marks = ", ".join(["%s"] * len(table.columns))
            cursor.executemany(f"INSERT INTO {_q(table.model._meta.db_table)} ({names}) VALUES ({marks})", rows)  # noqa: S608 - names from the models, quoted
    from portal.leaderboard.cache import leaderboard_changed

    leaderboard_changed()
    return True


def dump() -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows in key order, for comparing databases (of the cache generations only their scopes: each
    seed starts new ones, with a random token and the time)."""
    tables = {}
    for model in _models():
        fields = [model._meta.pk] if model is _versions_model() else _fields(model)
        tables[model._meta.db_table] = _rows(model, tuple(f.column for f in fields))
    return tables


def _integer_key(model: type[models.Model]) -> bool:
    return model._meta.pk.get_internal_type() in INTEGER_KEYS


def _largest_key(model: type[models.Model]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX({_q(model._meta.pk.column)}) FROM {_q(model._meta.db_table)}")  # noqa: S608 - names from the models, quoted
        return cursor.fetchone()[0] or 0


def _keys(model: type[models.Model]) -> frozenset[Any]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_q(model._meta.pk.column)} FROM {_q(model._meta.db_table)}")  # noqa: S608 - names from the models, quoted
        return frozenset(row[0] for row in cursor.fetchall())


def _rows(model: type[models.Model], columns: tuple[str, ...], *, above: int | None = None) -> list[tuple[Any, ...]]:
    """A table's rows (those with a key above `above`, when given) in key order."""
    key = _q(model._meta.pk.column)
    where = f" WHERE {key} > %s" if above is not None else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(_q(c) for c in columns)} FROM {_q(model._meta.db_table)}{where} ORDER BY {key}",  # noqa: S608 - names from the models, quoted
            [above] if above is not None else [],
        )
        return cursor.fetchall()


def _outside_keys(tables: list[TableRows]) -> dict[tuple[type[models.Model], Any], tuple[str, Any]] | None:
    """For each key a seeded row holds to a row the seed did not add: a unique field and its value, to find that
    row again in another database. None where the row has no unique field."""
    seeded = {t.model: t for t in tables}
    found_by: dict[tuple[type[models.Model], Any], tuple[str, Any]] = {}
    for table in tables:
        for index, column in enumerate(table.columns):
            target = _target(table.model, column)
            if target is None:
                continue
            for row in table.rows:
                value = row[index]
                if value is None or (target in seeded and seeded[target].added(value)) or (target, value) in found_by:
                    continue
                unique = next((f for f in _fields(target) if f.unique and not f.primary_key), None)
                if unique is None:
                    return None
                found_by[target, value] = (
                    unique.name,
                    target._default_manager.filter(pk=value).values_list(unique.name, flat=True).get(),
                )
    return found_by


def _target(model: type[models.Model], column: str) -> type[models.Model] | None:
    """The table a column's key points at (its own table for the primary key), or None for a plain column."""
    field = next(f for f in _fields(model) if f.column == column)
    if field.primary_key and not field.is_relation:
        return model
    if field.is_relation:
        if field.target_field != field.related_model._meta.pk:
            raise ValueError(f"{model.__name__}.{field.name} points at a field other than the key")
        return field.related_model
    return None


def _models() -> list[type[models.Model]]:
    return [m for m in apps.get_models(include_auto_created=True) if m._meta.managed and not m._meta.proxy]


def _fields(model: type[models.Model]) -> list[models.Field]:
    return list(model._meta.concrete_fields)


def _versions_model() -> type[models.Model]:
    return apps.get_model("leaderboard", "LeaderboardVersion")


def _q(name: str) -> str:
    return connection.ops.quote_name(name)
