"""GPU timing of one `run` call: CUPTI kernel activity records, with CUDA events as the flagged fallback.

Method (docs/performance.md): before every call the L2 cache is flushed by writing twice its size, and the
device is synchronised; a host timestamp from CUPTI's clock is taken, the call made, the device synchronised
again, and a second timestamp taken. Every kernel, memcpy and memset record (any stream) whose interval lies
inside that window belongs to the call; the call's time is the length of the union of those intervals, so
overlapping kernels on different streams are not counted twice. Candidate and baseline calls alternate
(order swapped every iteration) so that drift in clocks or temperature hits both alike.

Runs inside the candidate process; `cupti` is imported lazily because it needs a GPU driver.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evaluator.stats import merge_intervals


@dataclass
class TimedSeries:
    samples_ms: list[float] = field(default_factory=list)
    activities: list[int] = field(default_factory=list)  # GPU activities recorded per call


class CuptiTimer:
    """Collects CONCURRENT_KERNEL, MEMCPY and MEMSET activity records (these kinds do not serialise kernels)."""

    method = "cupti"

    def __init__(self) -> None:
        from cupti import cupti  # lazy: importing needs libcupti and a driver

        self._cupti = cupti
        self.records: list[tuple[int, int]] = []
        self._kinds = [
            cupti.ActivityKind.CONCURRENT_KERNEL,
            cupti.ActivityKind.MEMCPY,
            cupti.ActivityKind.MEMSET,
        ]

        def requested() -> tuple[int, int]:
            return 8 * 1024 * 1024, 0

        def completed(activities: list[Any]) -> None:
            for a in activities:
                start, end = getattr(a, "start", None), getattr(a, "end", None)
                if start is not None and end is not None and end >= start:
                    self.records.append((int(start), int(end)))

        cupti.activity_register_callbacks(requested, completed)
        for kind in self._kinds:
            cupti.activity_enable(kind)

    def now(self) -> int:
        return int(self._cupti.get_timestamp())

    def flush(self) -> None:
        self._cupti.activity_flush_all(1)

    def close(self) -> None:
        self.flush()
        for kind in self._kinds:
            try:
                self._cupti.activity_disable(kind)
            except Exception:  # noqa: BLE001, S110 - teardown must not mask the measurement
                pass


def make_timer() -> tuple[CuptiTimer | None, str]:
    """A CUPTI timer, or None and the reason it is unavailable (then CUDA events are used)."""
    try:
        return CuptiTimer(), ""
    except Exception as exc:  # noqa: BLE001 - any failure here means "fall back", with the reason recorded
        return None, f"CUPTI unavailable ({type(exc).__name__}: {exc}); timed with CUDA events"


def time_interleaved(
    calls: dict[str, Callable[[int], Any]],
    *,
    warmup: int,
    iters: int,
    flush_l2: Callable[[], Any],
    before_call: Callable[[str, int], Any] | None = None,
    timer: CuptiTimer | None = None,
) -> dict[str, TimedSeries]:
    """Time each named call `iters` times after `warmup` untimed rounds, alternating between the names.

    `calls[name](i)` makes call number i. `before_call(name, i)` runs outside the timed window (used to poison
    outputs). With `timer=None`, CUDA events on the current stream plus a device synchronise are used.
    """
    import torch

    names = list(calls)
    windows: list[tuple[str, int, int]] = []
    series = {n: TimedSeries() for n in names}
    for i in range(warmup + iters):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            if before_call is not None:
                before_call(name, i)
            flush_l2()
            torch.cuda.synchronize()
            if timer is not None:
                t0 = timer.now()
                calls[name](i)
                torch.cuda.synchronize()
                t1 = timer.now()
                if i >= warmup:
                    windows.append((name, t0, t1))
            else:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                calls[name](i)
                end.record()
                torch.cuda.synchronize()
                if i >= warmup:
                    series[name].samples_ms.append(float(start.elapsed_time(end)))
                    series[name].activities.append(-1)
    if timer is not None:
        timer.flush()
        records = sorted(timer.records)
        starts = [r[0] for r in records]
        for name, t0, t1 in windows:
            lo = bisect.bisect_left(starts, t0)
            hi = bisect.bisect_right(starts, t1)
            inside = [r for r in records[lo:hi] if r[1] <= t1]
            series[name].samples_ms.append(merge_intervals(inside) / 1e6)
            series[name].activities.append(len(inside))
    return series


def l2_flusher(device: Any) -> Callable[[], Any]:
    """A function that writes twice the device's L2 size, evicting whatever the last call left there."""
    import torch

    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 1024 * 1024)
    buf = torch.empty(2 * l2 // 4 + 1024, dtype=torch.int32, device=device)
    return buf.zero_
