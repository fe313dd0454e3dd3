"""bench/durations_compare.py on two pytest `--durations=0` logs: tests both runs have, tests only one has,
and files by how much their time changed."""

from __future__ import annotations

from tests.support.factories import REPO
from tests.support.script_modules import load_script

compare = load_script(REPO / "bench" / "durations_compare.py", "durations_compare")

BEFORE = """\
============================= slowest durations ==============================
10.00s call     tests/a/test_x.py::test_one
2.00s setup    tests/a/test_x.py::test_one
4.00s call     tests/a/test_y.py::test_gone
1.50s call     tests/b/test_z.py::test_two[p]
2764 passed in 474.03s
"""
AFTER = """\
6.00s call     tests/a/test_x.py::test_one
1.50s call     tests/b/test_z.py::test_two[p]
3.00s call     tests/c/test_new.py::test_three
0.25s teardown tests/c/test_new.py::test_three
"""


def test_durations_add_setup_call_and_teardown_per_test(tmp_path):
    log = tmp_path / "before.log"
    log.write_text(BEFORE)
    tests = compare.durations(str(log))
    assert tests["tests/a/test_x.py::test_one"] == 12.0
    assert len(tests) == 3  # the summary line and the banner are not tests


def test_report_splits_shared_and_one_sided_tests_and_ranks_files(tmp_path):
    (tmp_path / "b.log").write_text(BEFORE)
    (tmp_path / "a.log").write_text(AFTER)
    lines = compare.report(compare.durations(str(tmp_path / "b.log")), compare.durations(str(tmp_path / "a.log")))
    text = "\n".join(lines)
    assert "tests in both: 2, 13.5 s before, 7.5 s after" in text
    assert "tests only before: 1, 4.0 s; only after: 1, 3.2 s" in text
    more = lines.index("files whose tests took most more time (before -> after, s):")
    less = lines.index("files whose tests took most less time:")
    assert "tests/c/test_new.py" in lines[more + 1]
    assert lines[less + 1].split()[0] == "-6.0" and lines[less + 1].endswith("tests/a/test_x.py")
