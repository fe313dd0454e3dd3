"""The EVALUATOR_* on/off switches, read one way: "1", "true" or "yes" (any case, spaces ignored) is on; unset or
empty is the switch's default; anything else is off."""

from __future__ import annotations

import os

TRUE_VALUES = ("1", "true", "yes")


def env_flag(name: str, default: bool = False) -> bool:
    """Whether the environment variable `name` is set to a true value; unset or empty gives `default`."""
    value = os.environ.get(name, "").strip().lower()
    return default if not value else value in TRUE_VALUES


def option_or_flag(option: bool | None, name: str, default: bool = False) -> bool:
    """A switch given both ways: `option` when the caller set it, else the environment variable `name`."""
    return option if option is not None else env_flag(name, default)
