"""bench/probe_module_images.py runs first in a GPU pass (PASS_MODULE_IMAGES=1) and costs device time: a case whose
file, task or language went away must fail here, on CPU, not on the GPU host."""

from __future__ import annotations

from evaluator.both_sides.taskdata import find_task
from evaluator.languages import language
from tests.support.factories import REPO
from tests.support.script_modules import load_script


def test_every_case_names_a_file_a_task_and_a_language_that_exist(monkeypatch):
    probe = load_script(REPO / "bench" / "probe_module_images.py", "probe_module_images", monkeypatch)
    assert len({case[0] for case in probe.CASES}) == len(probe.CASES) >= 5
    for _label, task, path, lang in probe.CASES:
        assert (REPO / path).is_file(), path
        assert find_task(REPO / "tasks", task).name == task
        assert (REPO / path).suffix in language(lang).suffixes
