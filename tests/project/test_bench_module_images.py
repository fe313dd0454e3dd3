"""bench/probe_module_images.py runs first in a GPU pass (PASS_MODULE_IMAGES=1) and costs device time: a case whose
file, task or language went away must fail here, on CPU, not on the GPU host."""

from __future__ import annotations

import importlib.util
import sys

from evaluator.both_sides.taskdata import find_task
from evaluator.languages import language
from tests.support.factories import REPO


def test_every_case_names_a_file_a_task_and_a_language_that_exist(monkeypatch):
    spec = importlib.util.spec_from_file_location("probe_module_images", REPO / "bench" / "probe_module_images.py")
    assert spec and spec.loader
    probe = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "probe_module_images", probe)
    spec.loader.exec_module(probe)
    assert len({case[0] for case in probe.CASES}) == len(probe.CASES) >= 5
    for _label, task, path, lang in probe.CASES:
        assert (REPO / path).is_file(), path
        assert find_task(REPO / "tasks", task).name == task
        assert (REPO / path).suffix in language(lang).suffixes
