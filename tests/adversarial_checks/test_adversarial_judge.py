"""corpus.judge on synthetic verdict dicts: the expectation fields (held, arch_not, stdout_lacks) and the
rules for reason / min_latency_ms, plus the manifest's own consistency. No evaluation is run here."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

import corpus  # noqa: E402

KNOWN_EXPECT = {
    "status",
    "reason",
    "arch",
    "arch_not",
    "min_latency_ms",
    "other_tensor",
    "stdout_contains",
    "stdout_lacks",
    "held",
    "max_speedup",
    "latency_from",
    "caught_or_disclosed",
    "held_when_passed",
}
HOLD_CODES = {"timer_disagreement", "host_time", "profile_mismatch", "l2_persistence"}  # each with two attacks
KNOWN_HOLD_CODES = HOLD_CODES | {"inconsistent_figures", "profile_failed"}


def verdict(status="PASSED", *, arch="absent", message="", latency=1.5, stdout="", stderr="", integrity=None):
    v = {
        "status": status,
        "policy": [],
        "compile": {"output": "", "cached": False},
        "arch_check": {"status": arch, "reason": ""},
        "workloads": [
            {
                "status": status,
                "message": message,
                "performance": {"latency_ms": latency},
                "stdout_tail": stdout,
                "stderr_tail": stderr,
            }
        ],
    }
    if integrity is not None:
        v["integrity"] = integrity
    return v


def entry(**expect):
    return {"name": "synthetic", "expect": expect}


def holds(*codes):
    return {"holds": [{"code": c, "reason": f"{c} because"} for c in codes]}


def test_held_without_an_integrity_record_fails_with_the_plain_message():
    ok, detail = corpus.judge(entry(status=["PASSED"], held=["timer_disagreement"]), verdict())
    assert not ok
    assert corpus.NO_INTEGRITY in detail


def test_held_passes_when_any_listed_code_is_held():
    e = entry(status=["PASSED"], held=["timer_disagreement", "host_time"])
    assert corpus.judge(e, verdict(integrity=holds("host_time", "l2_persistence")))[0]
    ok, detail = corpus.judge(e, verdict(integrity=holds("l2_persistence")))
    assert not ok
    assert "not held for timer_disagreement/host_time" in detail and "l2_persistence" in detail


def test_empty_held_means_a_record_with_no_holds():
    e = entry(status=["PASSED"], arch="absent", held=[])
    assert corpus.judge(e, verdict(integrity={"holds": []}))[0]
    assert not corpus.judge(e, verdict())[0]  # no record at all
    ok, detail = corpus.judge(e, verdict(integrity=holds("profile_mismatch")))
    assert not ok and "must not be held" in detail


def test_arch_not():
    e = entry(status=["PASSED"], arch_not=["verified"])
    assert corpus.judge(e, verdict(arch="not_executed"))[0]
    ok, detail = corpus.judge(e, verdict(arch="verified"))
    assert not ok and "arch verified" in detail


def test_stdout_lacks_substitutes_the_planted_values_and_reads_both_tails():
    e = entry(status=["PASSED"], stdout_lacks=["{canary}", "{seed_hex}"])
    assert corpus.judge(e, verdict(stdout="[env] HOME=/tmp\n"))[0]
    ok, detail = corpus.judge(e, verdict(stdout=f"[env] SECRET_KEY = {corpus.CANARY}\n"))
    assert not ok and "{canary}" in detail
    assert corpus.CANARY not in detail  # the table never repeats the secret itself
    assert not corpus.judge(e, verdict(stderr=f"[bytes] seed {corpus.SEED_HEX}"))[0]


def test_reason_checked_only_when_not_passed_and_latency_only_when_passed():
    e = entry(status=["PASSED", "INCORRECT_NUMERICAL"], reason=["timed call"], min_latency_ms=0.3)
    assert corpus.judge(e, verdict(latency=1.2))[0]  # neutralised: timed at its honest speed
    ok, detail = corpus.judge(e, verdict(latency=0.01))
    assert not ok and "latency 0.01" in detail
    caught = verdict("INCORRECT_NUMERICAL", message="output of timed call 17 differs from the reference", latency=None)
    assert corpus.judge(e, caught)[0]
    ok, _ = corpus.judge(e, verdict("INCORRECT_NUMERICAL", message="trial 1 differs", latency=None))
    assert not ok


def test_new_status_is_compared_as_a_string():
    e = entry(status=["FOREIGN_KERNEL"], reason=["nvjet", "not compiled from the submission"])
    v = verdict("FOREIGN_KERNEL", message="kernel nvjet_sm90_tst_256x128 was not compiled from the submission")
    assert corpus.judge(e, v)[0]
    assert not corpus.judge(e, verdict("PASSED"))[0]


def test_old_fields_behave_as_before():
    rejected = verdict("POLICY_REJECTED")
    rejected["policy"] = [{"message": "loads code at run time: 'dlopen'"}]
    assert corpus.judge(entry(status=["POLICY_REJECTED"], reason=["loads code at run time"]), rejected)[0]
    e = entry(status=["INCORRECT_NUMERICAL"], reason=["trial 1"], stdout_contains="PASSED")
    assert corpus.judge(e, verdict("INCORRECT_NUMERICAL", message="trial 1 differs", stdout="PASSED!"))[0]
    assert not corpus.judge(e, verdict("INCORRECT_NUMERICAL", message="trial 1 differs", stdout="x"))[0]


def test_max_speedup_and_latency_from_judge_what_ranks():
    """The harness-rewrite class: a speedup inflated by a slowed baseline, a latency ranked on the candidate
    process's own timer when the trusted clock should have bounded it."""
    v = verdict()
    v["workloads"][0]["performance"].update(speedup_factor=1.81, latency_from="candidate process timer")
    assert not corpus.judge(entry(status=["PASSED"], max_speedup=0.5), v)[0]
    assert not corpus.judge(entry(status=["PASSED"], latency_from=["trusted clock bound", "trusted clock"]), v)[0]
    v["workloads"][0]["performance"].update(speedup_factor=0.04, latency_from="trusted clock bound")
    assert corpus.judge(entry(status=["PASSED"], max_speedup=0.5), v)[0]
    assert corpus.judge(entry(status=["PASSED"], latency_from=["trusted clock bound", "trusted clock"]), v)[0]
    # a verdict with no speedup cannot satisfy a bound on it
    del v["workloads"][0]["performance"]["speedup_factor"]
    assert not corpus.judge(entry(status=["PASSED"], max_speedup=0.5), v)[0]


def test_caught_or_disclosed_accepts_a_hold_a_lesser_status_or_a_disclosed_rate_and_nothing_else():
    """Target instructions only under the profiler, with launches identical to the timed ones."""
    e = entry(status=["PASSED"], caught_or_disclosed=["timer_disagreement"])
    silent = verdict(arch="verified", integrity=holds())
    silent["arch_check"].update(timed_beyond_non_tensor=None, timed_tflops=23.0)
    ok, found = corpus.judge(e, silent)
    assert not ok and "not disclosed" in found
    assert corpus.judge(e, verdict(arch="verified", integrity=holds("timer_disagreement")))[0]
    assert corpus.judge(e, verdict(arch="token", integrity=holds()))[0]
    disclosed = verdict(arch="verified", integrity=holds())
    disclosed["arch_check"].update(timed_beyond_non_tensor=False, timed_tflops=23.0)
    assert corpus.judge(e, disclosed)[0]
    above = verdict(arch="verified", integrity=holds())
    above["arch_check"].update(timed_beyond_non_tensor=True, timed_tflops=700.0)
    assert not corpus.judge(e, above)[0]  # a fast path when timed is a real tensor-core kernel, not this trick
    # unless the module holds a second tensor-core path (mma.sync) the timed calls may have taken, which is disclosed
    above["arch_check"].update(other_tensor_static={"mma": 8})
    assert corpus.judge(e, above)[0]
    # `other_tensor`: the count itself is required, held or not
    counted = dict(e, expect={**e["expect"], "other_tensor": True})
    assert corpus.judge(counted, above)[0]
    held = verdict(arch="verified", integrity=holds("timer_disagreement"))
    ok, found = corpus.judge(counted, held)
    assert not ok and "other_tensor_static" in found
    # a failing status is judged by `status` alone
    assert not corpus.judge(e, verdict("INCORRECT_NUMERICAL", integrity=holds()))[0]


def test_held_when_passed_binds_only_a_passing_verdict():
    e = entry(status=["PASSED", "FOREIGN_KERNEL"], reason=["cublas"], held_when_passed=["timer_disagreement"])
    assert not corpus.judge(e, verdict(integrity=holds()))[0]
    assert corpus.judge(e, verdict(integrity=holds("timer_disagreement")))[0]
    assert corpus.judge(e, verdict("FOREIGN_KERNEL", message="cublas kernel ran", integrity=holds()))[0]
    assert not corpus.judge(e, verdict("FOREIGN_KERNEL", message="something else", integrity=holds()))[0]


def test_judge_does_not_modify_the_verdict():
    v = verdict(integrity=holds("host_time"))
    before = copy.deepcopy(v)
    corpus.judge(entry(status=["PASSED"], held=["host_time"], stdout_lacks=["{canary}"]), v)
    assert v == before


def test_manifest_entries_are_consistent():
    data = json.loads(corpus.MANIFEST.read_text())
    names = [e["name"] for e in data["entries"]]
    assert len(names) == len(set(names))
    for e in data["entries"]:
        assert (corpus.HERE / e["file"]).is_file(), e["file"]
        assert set(e["expect"]) <= KNOWN_EXPECT, e["name"]
        assert set(e["expect"].get("held", [])) <= KNOWN_HOLD_CODES, e["name"]
        assert set(e["expect"].get("caught_or_disclosed", [])) <= KNOWN_HOLD_CODES, e["name"]
        assert set(e["expect"].get("held_when_passed", [])) <= KNOWN_HOLD_CODES, e["name"]
        assert e["on"] in data["tasks"]
        if e.get("secrets"):
            assert e["expect"].get("stdout_lacks"), e["name"]


@pytest.mark.parametrize("code", sorted(HOLD_CODES))
def test_every_hold_code_has_at_least_two_attacks(code):
    attacks = [e for e in corpus.entries(gpu=True) if code in e["expect"].get("held", [])]
    assert len(attacks) >= 2, code


def test_honest_controls_expect_no_holds():
    controls = [e for e in corpus.entries() if e["name"].startswith("control_")]
    assert len(controls) >= 6
    for e in controls:
        assert e["expect"]["status"] == ["PASSED"] and e["expect"]["held"] == [], e["name"]
        assert e["expect"]["arch"] in ("absent", "verified"), e["name"]
