"""bench/probe_gpm_artefact.py builds its variants by cutting lines out of the corpus's profiled-only wgmma kernel:
a changed harness must fail here, on CPU, not on the GPU host where the probe runs first in a pass and costs device
time."""

from __future__ import annotations

from tests.support.factories import REPO
from tests.support.script_modules import load_script


def _load_probe(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "bench"))  # the probe imports its sibling probes by name
    return load_script(REPO / "bench" / "probe_gpm_artefact.py", "probe_gpm_artefact", monkeypatch)


def test_each_variant_takes_away_what_its_name_says(monkeypatch):
    probe = _load_probe(monkeypatch)
    sources = {name: make() for name, make in probe.variants().items()}
    harness = sources["harness"]
    assert probe.LAUNCH in harness and probe.MALLOC in harness and probe.SIGN in harness
    assert "wgmma_kernel<<<" not in sources["harness, no wgmma launch"]
    assert "__global__ void __launch_bounds__(128) wgmma_kernel" in sources["harness, no wgmma launch"]
    assert "cudaMalloc(&sink" not in sources["  ... and no sink allocation"]
    assert "profiler_sign();" not in sources["  ... and no maps read"]
    without = sources["harness without its wgmma kernel"]
    assert "wgmma.mma_async" not in without and "gemm_tiled" in without and "extern char** environ;" in without
    added = sources["simt + unlaunched wgmma kernel"]
    assert "wgmma.mma_async" in added and "simt_gemm_kernel" in added and "wgmma_kernel<<<" not in added
    # the added kernel sits outside the anonymous namespace, where the compiler must keep it
    assert added.index("}  // namespace") < added.index("wgmma_kernel(float* sink")
    assert all(sources.values())
