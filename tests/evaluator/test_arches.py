"""The "full" rule is a property of the architecture (evaluator/arches.py), not of the profiler parser."""

from __future__ import annotations

from evaluator.arches import ARCHES, get_arch


def test_hopper_is_full_only_when_gmma_and_tma_both_executed():
    hopper = get_arch("sm_90a")
    assert hopper.full_families == {"gmma", "tma"}
    assert hopper.is_full(["gmma", "tma"]) and hopper.is_full({"tma", "gmma"})
    assert not hopper.is_full(["gmma"]) and not hopper.is_full(["tma"]) and not hopper.is_full([])


def test_architectures_without_a_full_rule_are_never_full():
    assert not get_arch("sm_100a").is_full(["tcgen05"])
    for arch in ARCHES.values():
        assert arch.full_families <= set(arch.families), arch.name
