"""Persisting-L2 state of the candidate process's CUDA context, reset before every timed call.

A candidate can ask the driver to keep lines resident in L2 across calls (a persisting-L2 limit and an access
policy window on a stream), which survives the L2 flush that should make every call start cold. The candidate
process reads the limit once before the candidate library loads, and before each timed call puts it back and
resets persisting lines, noting the largest value it found changed. Runs in the candidate process (it owns the
context), through the driver API loaded at run time (no libcuda at build time); on CPU test hosts it does nothing.
"""

from __future__ import annotations

import ctypes

CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


class L2Guard:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.changed_bytes = 0  # the largest persisting limit found changed since the baseline
        self.error = ""
        self._cuda = None
        self._baseline = 0
        if not enabled:
            return
        try:
            self._cuda = ctypes.CDLL("libcuda.so.1")
            self._baseline = self._read()
        except (OSError, RuntimeError) as exc:
            self._cuda = None
            self.error = f"persisting-L2 state not checked: {exc}"

    def _read(self) -> int:
        assert self._cuda is not None
        value = ctypes.c_size_t(0)
        rc = self._cuda.cuCtxGetLimit(ctypes.byref(value), CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
        if rc != 0:
            raise RuntimeError(f"cuCtxGetLimit returned {rc}")
        return int(value.value)

    def reset(self) -> None:
        """Before a timed call: the limit as it was before the candidate loaded, persisting lines normal."""
        if self._cuda is None:
            return
        try:
            now = self._read()
            if now != self._baseline:
                self.changed_bytes = max(self.changed_bytes, now)
                self._cuda.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(self._baseline))
            self._cuda.cuCtxResetPersistingL2Cache()
        except RuntimeError as exc:
            self.error = f"persisting-L2 state not checked: {exc}"
