"""The "of peak" denominator the portal shows is the one the verdict divided by (the GPU's dense peak for the task's
dtype), read back from the verdict's own rate and fraction, never looked up again: an FP8 kernel's page names the FP8
peak, a BF16 kernel's the BF16 one."""

from __future__ import annotations

from types import SimpleNamespace

from portal.core.serializers import peak_denominator
from portal.core.templatetags.portal_tags import datasheet_peak


def test_an_fp8_rate_is_shown_over_the_fp8_peak_its_verdict_used():
    fp8 = SimpleNamespace(tflops=1500.0, fraction_of_peak=1500.0 / 1978.9, gpu_name="NVIDIA H200")
    assert datasheet_peak(fp8) == "1978.9 TFLOP/s"  # a lookup by GPU name alone would say 989.4


def test_a_bf16_rate_is_shown_over_the_bf16_peak_and_missing_figures_say_unknown():
    assert peak_denominator(739.4, 739.4 / 989.4) == 989.4
    assert datasheet_peak(SimpleNamespace(tflops=739.4, fraction_of_peak=None)) == "unknown"
