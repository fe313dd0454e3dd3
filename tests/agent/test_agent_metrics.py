"""The one metrics function, on hand-made trajectories: correctness@k, correct-with-architecture@k,
best speedup with incorrect turns counting 0, tokens, completeness."""

from __future__ import annotations

from portal.agent.metrics import TrajectoryResult, TurnResult, compute_task_metrics


def turn(index, status, arch="", speedup=None, tokens=100):
    return TurnResult(index=index, status=status, arch_status=arch, speedup_factor=speedup, tokens=tokens)


def by_k(rows):
    return {row.k: row for row in rows}


def test_compile_error_then_verified_pass_counts_from_k_2_on():
    # The GPU scenario: turn 0 fails to compile, turn 1 is correct and verified.
    trajectory = TrajectoryResult([turn(0, "COMPILE_ERROR"), turn(1, "PASSED", "verified", 1.35)], finished=True)
    rows = by_k(compute_task_metrics([trajectory], [1, 4, 8]))
    assert (rows[1].correct, rows[1].correct_arch, rows[1].best_speedup) == (0, 0, 0.0)
    assert (rows[4].correct, rows[4].correct_arch, rows[4].best_speedup) == (1, 1, 1.35)
    assert rows[8].correct == 1 and rows[4].tokens == 200 and rows[1].tokens == 100
    assert all(r.complete and r.trajectories == 1 for r in rows.values())


def test_incorrect_turns_count_zero_speedup_and_static_only_is_not_correct():
    fast_but_wrong = TrajectoryResult(
        [turn(0, "INCORRECT_NUMERICAL", "verified", 9.0), turn(1, "STATIC_ONLY", "absent", None)], finished=True
    )
    rows = by_k(compute_task_metrics([fast_but_wrong], [1, 4]))
    assert rows[4].correct == 0 and rows[4].best_speedup == 0.0 and rows[4].correct_arch == 0


def test_correct_without_architecture_counts_for_correctness_only():
    simt = TrajectoryResult([turn(0, "PASSED", "absent", 0.4)], finished=True)
    token = TrajectoryResult([turn(0, "PASSED", "token", 0.9)], finished=True)
    verified_late = TrajectoryResult(
        [turn(0, "PASSED", "not_executed", 0.5), turn(5, "PASSED", "verified", 1.1)], finished=True
    )
    rows = by_k(compute_task_metrics([simt, token, verified_late], [1, 4, 8]))
    assert (rows[1].correct, rows[1].correct_arch) == (3, 0)
    assert rows[1].best_speedup == 0.9
    assert (rows[4].correct, rows[4].correct_arch) == (3, 0)  # turn 5 is not among the first 4
    assert (rows[8].correct, rows[8].correct_arch, rows[8].best_speedup) == (3, 1, 1.1)


def test_best_speedup_is_the_max_over_trajectories_and_turns_below_k():
    a = TrajectoryResult([turn(0, "PASSED", "verified", 1.05), turn(1, "PASSED", "verified", 1.3)], finished=True)
    b = TrajectoryResult([turn(0, "PASSED", "verified", 1.2)], finished=True)
    rows = by_k(compute_task_metrics([a, b], [1, 4]))
    assert rows[1].best_speedup == 1.2
    assert rows[4].best_speedup == 1.3


def test_a_trajectory_still_running_makes_the_row_incomplete_and_errors_count_as_incorrect():
    done = TrajectoryResult([turn(0, "MODEL_ERROR", tokens=0)], finished=True)
    running = TrajectoryResult([turn(0, "NO_KERNEL", tokens=42)], finished=False)
    rows = compute_task_metrics([done, running], [1])
    assert rows[0].complete is False and rows[0].trajectories == 2 and rows[0].correct == 0
    assert rows[0].tokens == 42


def test_no_trajectories_is_zero_everything():
    (row,) = compute_task_metrics([], [1])
    assert (row.trajectories, row.correct, row.best_speedup, row.tokens, row.complete) == (0, 0, 0.0, 0, True)
