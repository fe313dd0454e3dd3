"""bench/evaluator_phases.py times the evaluator's phases by wrapping its functions by name: a renamed function
must fail here, on CPU, not on the GPU host where the script runs, where it costs device time and leaves a pass
without its phase table."""

from __future__ import annotations

from tests.support.factories import REPO
from tests.support.script_modules import load_script


def test_every_phase_it_times_exists_and_is_put_back(monkeypatch):
    bench = load_script(REPO / "bench" / "evaluator_phases.py", "evaluator_phases", monkeypatch)
    phases = bench.Phases()
    bench.instrument(phases)  # AttributeError for a function the evaluator no longer has
    wrapped = [(owner, attr, original) for owner, attr, original in phases.wrapped]
    assert len(wrapped) >= 9
    assert all(getattr(owner, attr) is not original for owner, attr, original in wrapped)
    phases.restore()
    assert all(getattr(owner, attr) is original for owner, attr, original in wrapped)
