"""The integrity decisions (evaluator/checks/integrity.py) on synthetic observations: no GPU needed."""

from __future__ import annotations

import random

import pytest

from evaluator.both_sides.launches import Launch
from evaluator.checks import integrity as ig


def test_foreign_kernels_are_names_outside_the_submissions_cubin():
    own = ["_Z4gemmPKfS0_Pf", "_Z6reduceP6float4"]
    launched = ["_Z4gemmPKfS0_Pf", "nvjet_sm90_tst_128x256", "_Z4gemmPKfS0_Pf", "nvjet_sm90_tst_128x256"]
    assert ig.foreign_kernels(launched, own) == ["nvjet_sm90_tst_128x256"]
    assert ig.foreign_kernels(own, own) == []


def test_a_submission_name_defined_by_a_second_module_is_an_impostor():
    own = ["_Z4gemmv", "_Z4helpv"]
    functions = [(1, "_Z4gemmv"), (1, "_Z4helpv"), (2, "_Z4gemmv"), (3, "_Z5otherv")]
    assert ig.defined_twice(functions, ["_Z4gemmv", "_Z4helpv"], own) == ["_Z4gemmv"]
    assert ig.defined_twice(functions[:2] + functions[3:], ["_Z4gemmv"], own) == []


def test_a_submission_name_from_a_module_whose_image_is_not_the_builds_is_not_the_submissions():
    """Identity by code: with lazy loading only the forged module defines the name, so no second definition shows;
    its image does. Modules that define only other names (the framework's) are not judged here."""
    own = ["_Z4gemmv", "_Z4helpv"]
    built = {"a" * 64}
    images = {1: "a" * 64, 2: "b" * 64, 3: "", 4: "c" * 64}
    functions = [(1, "_Z4gemmv"), (1, "_Z4helpv"), (4, "_Z5otherv")]
    assert ig.defined_by_other_code(functions, images, ["_Z4gemmv", "_Z4helpv"], own, built) == []
    forged = [(2, "_Z4gemmv"), (1, "_Z4helpv")]
    assert ig.defined_by_other_code(forged, images, ["_Z4helpv", "_Z4gemmv"], own, built) == ["_Z4gemmv"]
    # An image CUPTI gave no bytes for, or a module with no image record at all, is not the build's either.
    assert ig.defined_by_other_code([(3, "_Z4gemmv")], images, ["_Z4gemmv"], own, built) == ["_Z4gemmv"]
    assert ig.defined_by_other_code([(9, "_Z4gemmv")], images, ["_Z4gemmv"], own, built) == ["_Z4gemmv"]
    # A name that did not run is not reported, whatever defines it.
    assert ig.defined_by_other_code(forged, images, ["_Z4helpv"], own, built) == []
    assert "whose image is none of the build's device code" in ig.describe_elsewhere("_Z4gemmv")


def test_describe_foreign_names_the_kernel_and_says_what_is_allowed():
    text = ig.describe_foreign(["nvjet_sm90_tst_128x256"], where="timed call 3")
    assert "nvjet_sm90_tst_128x256" in text and "timed call 3" in text and "memset" in text


def test_trusted_clock_allows_overhead_but_holds_a_factor():
    assert ig.trusted_clock_hold(reported_ms=0.80, trusted_ms=0.95) is None
    assert ig.trusted_clock_hold(reported_ms=0.01, trusted_ms=0.05) is None  # launch overhead of a tiny kernel
    hold = ig.trusted_clock_hold(reported_ms=0.008, trusted_ms=0.80)
    assert hold is not None and hold.code == ig.HOST_TIME and "100.0x" in hold.message
    assert ig.trusted_clock_hold(reported_ms=None, trusted_ms=0.8) is None


def test_ncu_disagreement_by_a_factor_holds_and_small_drift_does_not():
    assert ig.ncu_hold(reported_ms=0.80, ncu_ms=0.86) is None
    hold = ig.ncu_hold(reported_ms=0.008, ncu_ms=0.80)
    assert hold is not None and hold.code == ig.TIMER_DISAGREEMENT and "100.00x" in hold.message


def test_ncu_margin_covers_every_honest_ratio_measured_and_holds_a_third_either_way():
    # Honest ncu/timed ratios in the committed H200 verdicts ran from 0.902 to 1.008.
    for honest in (0.902, 0.929, 0.99, 1.008):
        assert ig.ncu_hold(reported_ms=1.0, ncu_ms=honest) is None
    # A profiled path a third faster (another kernel when not profiled: a library laundered only when timed)
    # or a third slower (extra target instructions only under the profiler) than the timed calls.
    assert ig.ncu_hold(reported_ms=1.0, ncu_ms=0.70) is not None
    assert ig.ncu_hold(reported_ms=1.0, ncu_ms=1.30) is not None


# (run, corpus entry, Nsight Compute's time of the profiled call, ranked latency, host floor), in ms, from the
# committed verdicts in docs/runs/integrity/<run>/corpus.json.gz: the expert Hopper GEMM at M=128, and the Triton
# kernel that launches cuBLAS with CUPTI's records blinded.
HONEST_SMALL = [
    ("h100-2026-12-05b", "control_reference_hopper", 0.05466, 0.06750, 0.00585),
    ("h100-2026-12-06d", "control_reference_hopper", 0.05590, 0.06890, 0.01149),
    ("h100-2026-12-06i", "control_reference_hopper", 0.05485, 0.06739, 0.00786),
    ("h100-2026-12-06j", "control_reference_hopper", 0.05402, 0.07319, 0.00742),
    ("h200-2026-12-05c", "control_reference_hopper", 0.05456, 0.06682, 0.01552),
]
HIDDEN_LIBRARY = [
    ("h100-2026-12-05b", "triton_harness_cupti_blind", 0.06966, 0.14457, 0.00688),
    ("h200-2026-12-05c", "triton_harness_cupti_blind", 0.06957, 0.12779, 0.01149),
]


def test_an_honest_small_kernel_is_judged_without_the_hosts_own_cost_of_each_call():
    """The ranked latency of a 0.05 ms kernel holds the host's cost of driving the call, which Nsight Compute never
    sees: h100-2026-12-06j held the expert GEMM at 0.738. Mutation caught: the floor not subtracted."""
    for run, entry, ncu_ms, ranked_ms, floor_ms in HONEST_SMALL:
        assert ig.ncu_hold(reported_ms=ranked_ms, ncu_ms=ncu_ms, host_floor_ms=floor_ms) is None, (run, entry)
    run, entry, ncu_ms, ranked_ms, floor_ms = HONEST_SMALL[3]
    assert ig.ncu_hold(reported_ms=ranked_ms, ncu_ms=ncu_ms) is not None  # the hold that run gave


def test_a_library_hidden_from_the_profile_is_still_held_once_the_host_floor_is_left_out():
    for run, entry, ncu_ms, ranked_ms, floor_ms in HIDDEN_LIBRARY:
        hold = ig.ncu_hold(reported_ms=ranked_ms, ncu_ms=ncu_ms, host_floor_ms=floor_ms)
        assert hold is not None and hold.code == ig.TIMER_DISAGREEMENT, (run, entry)
        assert "once the host's own" in hold.message


def test_the_host_floor_excuses_at_most_half_the_ranked_latency_and_never_a_slower_profile():
    # A floor as large as the ranked latency (a host too busy to tell) leaves half of it to compare with.
    assert ig.ncu_hold(reported_ms=0.06, ncu_ms=0.02, host_floor_ms=0.06) is not None
    assert ig.ncu_hold(reported_ms=0.06, ncu_ms=0.03, host_floor_ms=0.06) is None
    # The slower side is the ranked latency itself: a floor never excuses a profile slower than the timed calls.
    assert ig.ncu_hold(reported_ms=1.0, ncu_ms=1.30, host_floor_ms=0.2) is not None
    assert ig.ncu_hold(reported_ms=1.0, ncu_ms=0.70, host_floor_ms=-1.0) is not None  # a negative floor is none


def test_profiled_launches_must_match_every_timed_call():
    a = ig.Launch("_Z4wgmmav", (132, 1, 1), (384, 1, 1))
    b = ig.Launch("_Z4simtv", (1024, 1, 1), (256, 1, 1))
    assert ig.launch_mismatch([a], [[a], [a]]) is None
    hold = ig.launch_mismatch([a], [[a], [b]])
    assert hold is not None and hold.code == ig.PROFILE_MISMATCH and "timed call 2" in hold.message
    assert "_Z4simtv" in hold.message and "_Z4wgmmav" in hold.message
    # the same kernel with another grid is another launch
    assert ig.launch_mismatch([a], [[ig.Launch("_Z4wgmmav", (66, 1, 1), (384, 1, 1))]]) is not None


def test_l2_persistence_is_reported():
    assert ig.l2_hold(0) is None
    hold = ig.l2_hold(32 << 20)
    assert hold is not None and hold.code == ig.L2_PERSISTENCE


def test_integrity_record_keeps_each_hold_once():
    from evaluator.both_sides.verdict import Integrity

    record = Integrity()
    hold = ig.l2_hold(1024)
    record.hold(hold)
    record.hold(ig.l2_hold(1024))
    record.hold(None)
    assert len(record.holds) == 1


def test_check_chooser_rate_and_miss_probability():
    chooser = ig.CheckChooser(0.25, rng=random.Random(7))
    picks = sum(chooser.check() for _ in range(10_000))
    assert 2300 < picks < 2700
    # a kernel that skips a fifth of 50 timed calls escapes the default check rate with probability < 0.1%
    assert ig.miss_probability(50, 0.2) < 0.001
    with pytest.raises(ValueError):
        ig.CheckChooser(0.0)


def test_demangled_names_match_their_mangled_kernel_and_nothing_else():
    own = ["_Z21gemm_tma_wgmma_kernel14CUtensorMap_stS_P13__nv_bfloat16iii", "_ZN2ns6reduceILi8EEEvPf"]
    assert ig.matches_submission(
        "gemm_tma_wgmma_kernel(CUtensorMap_st, CUtensorMap_st, __nv_bfloat16 *, int, int, int)", own
    )
    assert ig.matches_submission("void ns::reduce<8>(float *)", own)
    assert not ig.matches_submission("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", own)
    assert not ig.matches_submission(
        "void at::vectorized_elementwise_kernel<8, at::CUDAFunctorOnSelf_add<c10::BFloat16>>(int, T2, T3)", own
    )


def _verdict_with_profile(status):
    from evaluator.both_sides.verdict import ArchCheck, Integrity, OverallStatus, Status, Verdict, WorkloadResult

    v = Verdict("t", "gemm", "sm_90a", OverallStatus.PASSED, "now", "0" * 64, 1, ["arch"])
    v.workloads = [WorkloadResult(uuid="w1", axes={}, status=Status.PASSED)]
    v.integrity = Integrity()
    check = ArchCheck(status, workload="w1", cupti_median_ms=0.8, ncu_gpu_time_ms=0.82)
    return v, check


def test_profiled_call_with_other_launches_is_held_and_not_verified():
    from evaluator.arch_check.arch_stage import ArchOutcome
    from evaluator.both_sides.verdict import ArchStatus
    from evaluator.checks.integrity_record import absorb_profile

    v, check = _verdict_with_profile(ArchStatus.VERIFIED)
    outcome = ArchOutcome(check, launches=[Launch("wgmma_kernel(float *)", (132, 1, 1), (384, 1, 1))])
    absorb_profile(v, outcome, {"w1": [[Launch("_Z11simt_kernelPf", (1024, 1, 1), (256, 1, 1))]]})
    assert [h.code for h in v.integrity.holds] == ["profile_mismatch"]
    assert check.status == ArchStatus.PROFILE_ERROR and "not verified" in check.reason

    v, check = _verdict_with_profile(ArchStatus.VERIFIED)
    same = ArchOutcome(check, launches=[Launch("wgmma_kernel(float *)", (132, 1, 1), (384, 1, 1))])
    absorb_profile(v, same, {"w1": [[Launch("_Z12wgmma_kernelPf", (132, 1, 1), (384, 1, 1))]] * 3})
    assert v.integrity.holds == [] and check.status == ArchStatus.VERIFIED


def test_the_profiled_time_is_held_against_the_ranked_latency_not_the_candidates_own_timer():
    """Launch records blinded in the candidate process (harness_cupti_blind): its own timer
    says 0.004 ms and agrees with nothing; the trusted clock bounds the ranked latency at cuBLAS's 0.80 ms; the
    profiled call is the submission's SIMT GEMM at 12.9 ms."""
    from evaluator.arch_check.arch_stage import ArchOutcome
    from evaluator.arch_check.ncu import compare_timers
    from evaluator.both_sides.verdict import ArchStatus
    from evaluator.checks.integrity_record import absorb_profile

    v, check = _verdict_with_profile(ArchStatus.VERIFIED)
    check.ncu_gpu_time_ms = 12.9
    compare_timers(check, 0.004, ranked_latency_ms=0.80)
    absorb_profile(v, ArchOutcome(check), {})
    assert [h.code for h in v.integrity.holds] == ["timer_disagreement"]
    assert "0.8 ms of the timed calls" in v.integrity.holds[0].message
    # The same profiled time with a ranked latency it describes: no hold, however the in-process timer read.
    v, check = _verdict_with_profile(ArchStatus.VERIFIED)
    check.ncu_gpu_time_ms = 0.82
    compare_timers(check, 0.004, ranked_latency_ms=0.80)
    absorb_profile(v, ArchOutcome(check), {})
    assert v.integrity.holds == []


def _timed(v):
    from evaluator.both_sides.verdict import Performance

    v.workloads[0].performance = Performance(latency_ms=0.8)
    return v


def test_a_profile_that_failed_on_the_candidates_side_holds_a_timed_result_and_a_host_failure_notes_it():
    from evaluator.arch_check.arch_stage import ArchOutcome
    from evaluator.both_sides.verdict import ArchStatus
    from evaluator.checks.integrity_record import absorb_profile

    v, check = _verdict_with_profile(ArchStatus.ABSENT)
    _timed(v)
    absorb_profile(v, ArchOutcome(check, failure="no kernel of the submission ran", failure_by_candidate=True), {})
    assert [h.code for h in v.integrity.holds] == ["profile_failed"]
    assert "no kernel of the submission ran" in v.integrity.holds[0].message
    v, check = _verdict_with_profile(ArchStatus.ABSENT)
    _timed(v)
    absorb_profile(v, ArchOutcome(check, failure="ncu is not installed", failure_by_candidate=False), {})
    assert v.integrity.holds == [] and "not cross-checked" in v.integrity.notes[0]
    v, check = _verdict_with_profile(ArchStatus.ABSENT)  # nothing timed: nothing to cross-check
    absorb_profile(v, ArchOutcome(check, failure="no kernel of the submission ran", failure_by_candidate=True), {})
    assert v.integrity.holds == [] and v.integrity.notes == []


def test_a_kernel_profiled_only_for_the_cross_check_is_held_only_when_the_timed_calls_were_faster():
    from evaluator.arch_check.arch_stage import ArchOutcome
    from evaluator.arch_check.ncu import compare_timers
    from evaluator.both_sides.verdict import ArchStatus
    from evaluator.checks.integrity_record import absorb_profile

    def absorbed(ncu_ms, ranked_ms, launches):
        v, check = _verdict_with_profile(ArchStatus.ABSENT)
        check.ncu_gpu_time_ms = ncu_ms
        compare_timers(check, ranked_ms, ranked_latency_ms=ranked_ms)
        simt = [Launch("_Z4simtv", (1024, 1, 1), (256, 1, 1))]
        absorb_profile(v, ArchOutcome(check, launches=simt, cross_check_only=True), {"w1": [launches]})
        return [h.code for h in v.integrity.holds]

    # harness_cupti_blind: its SIMT kernel profiled at 0.78 ms; the timed calls (cuBLAS, records off) 0.043 ms.
    assert absorbed(0.78, 0.043, []) == ["timer_disagreement"]
    # An honest kernel whose timed calls also copy or fill (Nsight Compute times kernels only): not held, and its
    # launch records (a copy engine, a graph) are not compared.
    assert absorbed(0.5, 0.8, [Launch("_Z5otherv", (1, 1, 1), (32, 1, 1))]) == []
    assert absorbed(0.82, 0.8, []) == []


def test_a_foreign_kernel_in_the_profiled_call_fails_its_workload():
    from evaluator.arch_check.arch_stage import ArchOutcome
    from evaluator.both_sides.verdict import ArchStatus, Status
    from evaluator.checks.integrity_record import absorb_profile

    v, check = _verdict_with_profile(ArchStatus.VERIFIED)
    outcome = ArchOutcome(check, foreign_kernels=["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"])
    absorb_profile(v, outcome, {})
    assert v.workloads[0].status == Status.FOREIGN_KERNEL and "nvjet_sm90" in v.workloads[0].message
    assert check.status != ArchStatus.VERIFIED


def test_a_kernel_with_the_submissions_name_but_another_footprint_is_not_the_submissions():
    from evaluator.both_sides.verdict import KernelFootprint as F

    compiled = {"_Z4gemmv": [F(32, 9472)], "_Z4helpv": [F(12, 0), F(16, 0)]}
    ok = ig.footprint_checks(
        [("_Z4gemmv", 32, 8448), ("_Z4gemmv", 32, 9472), ("_Z4helpv", 16, 1024), ("nvjet_x", 168, 0)], compiled
    )
    assert [(c.name, c.matches) for c in ok] == [("_Z4gemmv", True)] * 2 + [("_Z4helpv", True)]
    bad = ig.footprint_checks([("_Z4gemmv", 26, 0), ("_Z4gemmv", 32, 0), ("_Z4gemmv", 40, 9472)], compiled)
    assert [c.matches for c in bad] == [False, False, False]
    # Launches show at least 16 registers (seen on the H200: 8 and 13 as compiled, 16 as launched); 17 is not 12.
    small = {"_Z5probePi": [F(8, 0)], "_Z7to_bf16v": [F(13, 0)], "_Z3oddv": [F(12, 0)]}
    seen = ig.footprint_checks([("_Z5probePi", 16, 0), ("_Z7to_bf16v", 16, 0), ("_Z3oddv", 17, 0)], small)
    assert [c.matches for c in seen] == [True, True, False]
    assert not ig.footprint_checks([("_Z5probePi", 8, 0)], {"_Z5probePi": [F(20, 0)]})[0].matches
    assert bad[0].compiled == [F(32, 9472)]
    text = ig.describe_footprint(bad[0])
    assert "26 registers and 0 bytes" in text and "compiled with 32 registers and 9472 bytes" in text


def test_the_timing_message_footprints_fail_a_runtime_module_with_the_submissions_name():
    """The recorded shape of module_loaded_same_name on the H200: the submission's SIMT gemm_tiled is compiled in
    (32 registers, 8448 + 1024 bytes shared) but a PTX module loaded at run time launches under its name."""
    from evaluator.both_sides import protocol
    from evaluator.both_sides.verdict import KernelFootprint, Status, WorkloadResult
    from evaluator.checks.workload_checks import WorkloadRun, check_kernels

    name = "_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii"
    compiled = {name: [KernelFootprint(32, 9472)]}
    call = [[name, [32, 28, 1], [32, 8, 1]]]

    def message(registers: int, shared: int) -> dict:
        return protocol.timing_event(
            "cupti",
            None,
            {"candidate": {"samples_ms": [1.0], "activities": [1]}},
            {"timed": [call], "trials": [call], "batch": []},
            [[7, name]],
            {"changed_bytes": 0, "error": None},
            [[name, registers, shared], ["nvjet_baseline_kernel", 168, 0]],
        )

    honest = WorkloadRun(WorkloadResult(uuid="w", axes={}, status=Status.PASSED))
    assert not check_kernels(protocol.check_timing(message(32, 8448)), honest, [name], compiled)
    assert [c.matches for c in honest.footprints] == [True]
    impostor = WorkloadRun(WorkloadResult(uuid="w", axes={}, status=Status.PASSED))
    assert check_kernels(protocol.check_timing(message(20, 0)), impostor, [name], compiled)
    assert impostor.result.status == Status.FOREIGN_KERNEL and impostor.result.performance is None
    assert "20 registers and 0 bytes" in impostor.result.message and "not the submission's" in impostor.result.message
    with pytest.raises(protocol.ChannelViolation):
        protocol.check_timing({**message(32, 8448), "footprints": [[name, "32", 8448]]})


def test_the_timing_message_module_images_fail_a_forged_footprint_from_a_runtime_module():
    """The class-5 path: a module loaded at run time whose kernel forges the submission's name and footprint, with
    the submission's own module never loaded (lazy loading). Only the image of the module that defines the name
    tells it apart; without module records or the build's images the check says it did not run."""
    from evaluator.both_sides import protocol
    from evaluator.both_sides.verdict import KernelFootprint, Status, WorkloadResult
    from evaluator.checks.workload_checks import WorkloadRun, check_kernels

    name = "_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii"
    compiled = {name: [KernelFootprint(32, 9472)]}
    call = [[name, [32, 28, 1], [32, 8, 1]]]
    built = frozenset({"1" * 64})

    def message(modules: list | None) -> dict:
        return protocol.timing_event(
            "cupti",
            None,
            {"candidate": {"samples_ms": [1.0], "activities": [1]}},
            {"timed": [call], "trials": [call], "batch": []},
            [[7, name], [3, "_ZN2at6native18elementwise_kernelEv"]],
            {"changed_bytes": 0, "error": None},
            [[name, 32, 8448]],
            modules,
        )

    def judged(modules: list | None, images: frozenset[str] | None = built) -> WorkloadRun:
        run = WorkloadRun(WorkloadResult(uuid="w", axes={}, status=Status.PASSED))
        check_kernels(protocol.check_timing(message(modules)), run, [name], compiled, images)
        return run

    honest = judged([[3, "f" * 64], [7, "1" * 64]])
    assert honest.result.status == Status.PASSED and not honest.notes
    forged = judged([[3, "f" * 64], [7, "2" * 64]])
    assert forged.result.status == Status.FOREIGN_KERNEL and forged.result.performance is None
    assert "whose image is none of the build's device code" in forged.result.message
    assert forged.foreign_kernels == [f"{name} (defined by a module that is not the submission's compiled code)"]
    assert judged(None).result.status == Status.PASSED
    assert judged(None).notes == ["module images not checked: this host's CUPTI gives no module records"]
    assert judged([[7, "2" * 64]], None).notes == ["module images not checked: the build's device code is unknown"]
    for bad in ([[7, "XYZ"]], [["7", "1" * 64]], [[7]], "none", [[True, ""]]):
        with pytest.raises(protocol.ChannelViolation):
            protocol.check_timing(message(bad))


def test_launch_records_from_the_wire_are_typed_and_three_dimensional():
    """One Launch record from CUPTI to the comparison (one type from the profiler's record
    to the integrity checks, annotated and stored alike). A record from the candidate process
    whose grid or block is not three integers is a forged or broken channel, not a launch."""
    from evaluator.both_sides.protocol import ChannelViolation, launches_of

    (launch,) = launches_of([["_Z4gemmv", [132, 1, 1], [384, 1, 1]]])
    assert launch == Launch("_Z4gemmv", (132, 1, 1), (384, 1, 1)) and launch.grid == (132, 1, 1)
    name, grid, block = launch  # unpacks as before
    assert (name, grid, block) == ("_Z4gemmv", (132, 1, 1), (384, 1, 1))
    for bad in ([[1, 2], [1, 1, 1]], [[1, 2, 3, 4], [1, 1, 1]], [["x", 1, 1], [1, 1, 1]], [None, [1, 1, 1]]):
        with pytest.raises(ChannelViolation):
            launches_of([["_Z4gemmv", *bad]])
