"""Fixit's pure row builder: which turns pair up, filters, dedupe by source hash, the message forms."""

from __future__ import annotations

import pytest

from portal.fixit.pairs import PairFilter, TrajectoryRecord, TurnRecord, build_rows, sha256_text

BROKEN = "__global__ void k( { }\n"
WRONG_MATH = "__global__ void k(float* o) { o[0] = 1; }\n"
FIXED = "__global__ void k(float* o) { o[0] = 2; }\n"
FASTER = "__global__ void k(float* o) { o[0] = 2; /* tiled */ }\n"


def turn(index, status, kernel="", *, arch="verified", speedup=None, feedback="", reply=None, version="0.1.0"):
    return TurnRecord(
        index=index,
        status=status,
        arch_status=arch if status == "PASSED" else "not_requested",
        speedup_factor=speedup,
        kernel=kernel,
        reply=reply if reply is not None else (f"```cuda\n{kernel}```" if kernel else "thinking..."),
        feedback=feedback or f"Evaluation result: {status}.",
        evaluation_id=None if status == "NO_KERNEL" else f"ev-{index}-{sha256_text(kernel)[:6]}",
        evaluator_version=version,
    )


def trajectory(turns, *, run=1, tid=10, model="m", arch="sm_90a", task="gemm"):
    return TrajectoryRecord(
        run_id=run,
        trajectory_id=tid,
        model=model,
        arch=arch,
        task=task,
        system="SYS",
        prompt="TASK",
        turns=tuple(turns),
    )


def test_a_failing_turn_followed_by_a_passing_one_gives_exactly_one_pair_and_one_generation_row():
    t = trajectory(
        [turn(0, "COMPILE_ERROR", BROKEN, feedback="error: expected ')'"), turn(1, "PASSED", FIXED, speedup=1.3)]
    )
    rows = build_rows([t], PairFilter())
    assert len(rows.repair) == 1 and len(rows.generation) == 1
    pair = rows.repair[0].document()
    assert (pair["failed_turn"], pair["fixed_turn"], pair["failed_status"]) == (0, 1, "COMPILE_ERROR")
    assert (
        pair["failed_evaluation"] == t.turns[0].evaluation_id and pair["fixed_evaluation"] == t.turns[1].evaluation_id
    )
    assert (pair["run"], pair["trajectory"], pair["model"], pair["evaluator_version"]) == (1, 10, "m", "0.1.0")
    assert pair["wrong_sha256"] == sha256_text(BROKEN) and pair["fixed_sha256"] == sha256_text(FIXED)
    assert [(m["role"], m["loss"]) for m in pair["messages"]] == [
        ("system", False),
        ("user", False),
        ("assistant", False),
        ("user", False),
        ("assistant", True),
    ]
    assert [m["content"] for m in pair["messages"]] == [
        "SYS",
        "TASK",
        f"```cuda\n{BROKEN.rstrip()}\n```",
        "error: expected ')'",
        f"```cuda\n{FIXED.rstrip()}\n```",
    ]
    gen = rows.generation[0].document()
    assert [(m["role"], m["loss"]) for m in gen["messages"]] == [
        ("system", False),
        ("user", False),
        ("assistant", True),
    ]
    assert gen["turn"] == 1 and gen["speedup_factor"] == 1.3


def test_every_failure_pairs_with_the_first_later_pass_and_nothing_pairs_backwards():
    t = trajectory(
        [
            turn(0, "PASSED", FIXED, speedup=1.0),
            turn(1, "COMPILE_ERROR", BROKEN),
            turn(2, "INCORRECT_NUMERICAL", WRONG_MATH),
            turn(3, "STATIC_ONLY", "__global__ void s() {}\n"),  # nothing known: neither a failure nor a pass
            turn(4, "PASSED", FASTER, speedup=1.5),
            turn(5, "RUNTIME_ERROR", "__global__ void late() {}\n"),  # no later pass: no pair
        ]
    )
    rows = build_rows([t], PairFilter())
    assert [(r.failed_turn, r.fixed_turn) for r in rows.repair] == [(1, 4), (2, 4)]
    assert [g.turn for g in rows.generation] == [0, 4]


def test_filters_verified_only_min_speedup_and_failure_status():
    t = trajectory(
        [
            turn(0, "COMPILE_ERROR", BROKEN),
            turn(1, "PASSED", FIXED, arch="absent", speedup=2.0),  # correct, but no wgmma/TMA executed
            turn(2, "TIMEOUT", WRONG_MATH),
            turn(3, "PASSED", FASTER, speedup=1.1),
        ]
    )
    assert [(r.failed_turn, r.fixed_turn) for r in build_rows([t], PairFilter()).repair] == [(0, 1), (2, 3)]
    verified = build_rows([t], PairFilter(verified_only=True))
    assert [(r.failed_turn, r.fixed_turn) for r in verified.repair] == [(0, 3), (2, 3)]
    assert [g.turn for g in verified.generation] == [3]
    fast = build_rows([t], PairFilter(min_speedup=1.5))
    assert [(r.failed_turn, r.fixed_turn) for r in fast.repair] == [(0, 1)]
    timeouts = build_rows([t], PairFilter(failure_statuses=frozenset({"TIMEOUT"})))
    assert [(r.failed_turn, r.fixed_turn) for r in timeouts.repair] == [(2, 3)]


def test_arch_task_and_model_filters_and_a_no_kernel_turn_starts_a_pair_from_its_reply():
    a = trajectory([turn(0, "NO_KERNEL", reply="ran out of tokens <think>..."), turn(1, "PASSED", FIXED)], model="a")
    b = trajectory([turn(0, "COMPILE_ERROR", BROKEN), turn(1, "PASSED", FASTER)], run=2, tid=20, arch="sm_100a")
    rows = build_rows([a, b], PairFilter())
    assert [(r.model, r.failed_status) for r in rows.repair] == [("a", "NO_KERNEL"), ("m", "COMPILE_ERROR")]
    assert rows.repair[0].messages()[2]["content"] == "ran out of tokens <think>..."
    assert rows.repair[0].failed_evaluation is None
    assert [r.run for r in build_rows([a, b], PairFilter(arches=frozenset({"sm_100a"}))).repair] == [2]
    assert [r.run for r in build_rows([a, b], PairFilter(models=frozenset({"a"}))).repair] == [1]
    assert build_rows([a, b], PairFilter(tasks=frozenset({"other"}))).repair == []


def test_duplicates_by_source_hash_are_dropped_the_first_kept():
    first = trajectory([turn(0, "COMPILE_ERROR", BROKEN), turn(1, "PASSED", FIXED)], run=1, tid=1)
    again = trajectory([turn(0, "COMPILE_ERROR", BROKEN), turn(1, "PASSED", FIXED)], run=2, tid=2)
    rows = build_rows([again, first], PairFilter())
    assert [r.run for r in rows.repair] == [1] and [g.run for g in rows.generation] == [1]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"colour": []}, "unknown filter"),
        ({"failure_statuses": ["PASSED"]}, "unknown failure status"),
        ({"min_speedup": "fast"}, "min_speedup"),
        ({"min_speedup": -1}, "min_speedup"),
        ({"verified_only": "yes"}, "verified_only"),
        ({"tasks": "gemm"}, "list of names"),
        ([], "must be an object"),
    ],
)
def test_bad_filter_documents_are_refused_with_a_message(document, message):
    with pytest.raises(ValueError, match=message):
        PairFilter.from_document(document)


def test_a_filter_document_round_trips():
    f = PairFilter.from_document({"arches": ["sm_90a"], "verified_only": True, "min_speedup": 1})
    assert PairFilter.from_document(f.document()) == f and f.min_speedup == 1.0
