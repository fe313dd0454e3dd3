"""The one visibility rule (docs/visibility.md), the parts every app shares: who is staff, banned or the owner, and
the registry through which an app hides rows of an app below it along with its own. Not visible means 404, never
403: the caller cannot tell it from a missing id.

Each app applies the rule to the rows it owns: submissions and evaluations in `portal/submissions/visibility.py`,
model runs and trajectories in `portal/agent/visibility.py`. Where a row is hidden because of something an app
above its owner holds (a model turn's submission is hidden with its run), that app registers a `HidingRule` for
the owner's model in its AppConfig.ready(); the owner asks `hiding_rules(Model)` and never imports the app above.

Staff see everything (audit). The owner, while not banned, still sees their own hidden work."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q


def is_staff(viewer) -> bool:
    return bool(viewer is not None and getattr(viewer, "is_authenticated", False) and viewer.is_staff)


def is_banned(user) -> bool:
    profile = getattr(user, "profile", None) if user is not None else None
    return bool(profile and profile.is_banned)


def is_owner(viewer, owner_id: int | None) -> bool:
    """The viewer made the row and is not banned (a banned user is no owner any more)."""
    return bool(
        owner_id is not None
        and viewer is not None
        and getattr(viewer, "is_authenticated", False)
        and viewer.id == owner_id
        and not is_banned(viewer)
    )


# --------------------------------------------------------------------------- hiding rules of apps above


@dataclass(frozen=True)
class HidingRule:
    """One more reason a row of some model is hidden from the public: `hides(row)` asks it of one row,
    `hidden()` gives the Q of every such row (for lists, which exclude it)."""

    name: str
    hides: Callable[[Any], bool]
    hidden: Callable[[], Q]


_rules: dict[type, dict[str, HidingRule]] = {}


def register_hiding_rule(model: type, rule: HidingRule) -> None:
    """Add `rule` to the rows of `model` (an AppConfig.ready() calls this; registering a name again replaces it)."""
    _rules.setdefault(model, {})[rule.name] = rule


def hiding_rules(model: type) -> tuple[HidingRule, ...]:
    """The rules registered for `model`, in registration order (INSTALLED_APPS order)."""
    return tuple(_rules.get(model, {}).values())
