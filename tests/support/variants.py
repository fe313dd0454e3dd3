"""The behaviours of tests/kernels/cpu_gemm_variants.cu, picked at run time: one source, so one compile for
every variant (the shared compile cache hits), where a `#define` per variant cost a compile each (~7 s of nvcc)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.factories import REPO

SOURCE = (REPO / "tests" / "kernels" / "cpu_gemm_variants.cu").read_text()
VARIANT_FILE = "ptxbench-test-variant"  # the kernel finds it beside its job file, in the evaluation's workdir


@contextlib.contextmanager
def variant_workdir(variant: str | None) -> Iterator[Path]:
    """A work folder for one evaluation (Options.workdir) whose candidate behaves as `variant` (None: correct)."""
    with tempfile.TemporaryDirectory(prefix="ptxbench-variant-") as work:
        if variant:
            (Path(work) / VARIANT_FILE).write_text(variant + "\n")
        yield Path(work)
