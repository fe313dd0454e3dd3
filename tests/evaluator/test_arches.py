"""The "full" rule is a property of the architecture (evaluator/both_sides/arches.py), not of the profiler parser."""

from __future__ import annotations

from evaluator.both_sides.arches import ARCHES, get_arch


def test_hopper_is_full_only_when_gmma_and_tma_both_executed():
    hopper = get_arch("sm_90a")
    assert hopper.full_families == {"gmma", "tma"}
    assert hopper.is_full(["gmma", "tma"]) and hopper.is_full({"tma", "gmma"})
    assert not hopper.is_full(["gmma"]) and not hopper.is_full(["tma"]) and not hopper.is_full([])


def test_architectures_without_a_full_rule_are_never_full():
    assert not get_arch("sm_100a").is_full(["tcgen05"])
    for arch in ARCHES.values():
        assert arch.full_families <= set(arch.families), arch.name


def test_every_architecture_names_known_families_a_share_rule_and_its_own_pack():
    import json
    from pathlib import Path

    from evaluator.both_sides.arches import FAMILIES, MnemonicShareRule

    packs = Path(__file__).resolve().parents[2] / "tasks" / "packs"
    for arch in ARCHES.values():
        assert set(arch.families) <= set(FAMILIES), arch.name
        assert arch.tensor_share is not None, f"{arch.name}: without a share rule none of its kernels is verified"
        if isinstance(arch.tensor_share, MnemonicShareRule):
            assert set(arch.tensor_share.families) <= set(arch.families), arch.name
        assert arch.gpu_models and arch.target_note, arch.name
        manifest = json.loads((packs / arch.knowledge_pack / "manifest.json").read_text())
        assert manifest["arch"] == arch.name


def test_families_match_exactly_or_by_prefix():
    from evaluator.both_sides.arches import family_of

    assert family_of("HGMMA.64x8x16.F32.BF16") == "gmma" and family_of("HGMMAX") is None  # exact
    assert family_of("UTCHMMA") == family_of("UTCBAR.MULTICAST") == family_of("LDTM.x16") == "tcgen05"  # prefix
    assert family_of("UTMACMDFLUSH") is None and family_of("UTMALDG.2D") == "tma"
    assert family_of("FFMA") is None


def test_the_gpu_model_naming_the_most_words_is_tried_first_across_architectures(monkeypatch):
    from dataclasses import replace

    from evaluator.both_sides import arches
    from evaluator.checks.peaks import gpu_model, hbm_tbps

    assert gpu_model("NVIDIA H100 PCIe").words == ("H100", "PCIE")
    assert gpu_model("NVIDIA H100 80GB HBM3").words == ("H100",)
    assert gpu_model("NVIDIA GH200 480GB") is None  # whole words: GH200 is no H200
    # a later architecture's "B200 NVL" is still tried before the earlier one's "B200"
    nvl = arches.GpuModel(("B200", "NVL"), {"bfloat16": 1.0}, hbm_tbps=1.0)
    monkeypatch.setitem(arches.ARCHES, "sm_999x", replace(arches.ARCHES["sm_100a"], name="sm_999x", gpu_models=(nvl,)))
    assert hbm_tbps("NVIDIA B200 NVL") == 1.0 and hbm_tbps("NVIDIA B200") == 8.0
