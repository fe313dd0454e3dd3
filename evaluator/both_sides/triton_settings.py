"""The Triton settings that the compile and the candidate process must share (they enter Triton's cache key).

Used on both sides of the trust boundary: the parent's Triton build (evaluator/build/triton_compile.py) gives them to the
ahead-of-time compile's environment, and the candidate side (evaluator/candidate_process/triton_aot.py,
evaluator/candidate_process/triton_runtime.py) sets them again in its own process.
"""

from __future__ import annotations

from pathlib import Path


def triton_env(cache_dir: Path) -> dict[str, str]:
    """The Triton settings of both the compile and the candidate process (they enter Triton's cache key)."""
    return {
        "TRITON_CACHE_DIR": str(cache_dir),
        "TRITON_DEFAULT_FP_FUSION": "1",  # Triton 3.9's default, stated (silences its warning)
    }
