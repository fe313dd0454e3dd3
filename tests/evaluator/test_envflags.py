"""One reading of the EVALUATOR_* on/off switches."""

from __future__ import annotations

import pytest

from evaluator.envflags import env_flag
from evaluator.isolation.jail import allow_unsandboxed_from_env


@pytest.mark.parametrize(
    ("value", "on"),
    [("1", True), (" TRUE ", True), ("yes", True), ("0", False), ("no", False), ("", False), ("on", False)],
)
def test_env_flag(monkeypatch, value, on):
    monkeypatch.setenv("EVALUATOR_ALLOW_UNSANDBOXED", value)
    assert env_flag("EVALUATOR_ALLOW_UNSANDBOXED") is on
    assert allow_unsandboxed_from_env() is on


def test_unset_is_off(monkeypatch):
    monkeypatch.delenv("EVALUATOR_SOME_SWITCH", raising=False)
    assert env_flag("EVALUATOR_SOME_SWITCH") is False


@pytest.mark.parametrize(("value", "on"), [(None, True), ("", True), ("1", True), ("0", False), ("off", False)])
def test_a_switch_that_defaults_on_is_turned_off_only_by_a_value(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv("EVALUATOR_SOME_SWITCH", raising=False)
    else:
        monkeypatch.setenv("EVALUATOR_SOME_SWITCH", value)
    assert env_flag("EVALUATOR_SOME_SWITCH", default=True) is on
