"""The EVALUATOR_* on/off switches, read one way: "1", "true" or "yes" (any case, spaces ignored) is on."""

from __future__ import annotations

import os

TRUE_VALUES = ("1", "true", "yes")


def env_flag(name: str) -> bool:
    """Whether the environment variable `name` is set to a true value; unset or anything else is off."""
    return os.environ.get(name, "").strip().lower() in TRUE_VALUES
