"""GPU timing of one `run` call: CUPTI kernel activity records, with CUDA events as the flagged fallback.

Method (docs/performance.md): before every call the L2 cache is flushed by writing twice its size, and the
device is synchronised; a host timestamp from CUPTI's clock is taken, the call made, the device synchronised
again, and a second timestamp taken. Every kernel, memcpy and memset record (any stream) whose interval lies
inside that window belongs to the call; the call's time is the length of the union of those intervals, so
overlapping kernels on different streams are not counted twice. The candidate process times its timed rounds'
calls this way (candidate_process/child.py); `time_interleaved`, which alternates named calls in one process, serves
the benchmark scripts (scripts/measure_baselines.py, bench/).

The same timer records which kernels ran in each call (name, grid, block) and which module defines each
function, for the integrity checks (evaluator/checks/integrity.py): only the submission's kernels may do the work.
Everything here runs inside the candidate process, so nothing ranked comes from it: the parent's own clock over
back-to-back batches ranks (evaluator/measure/lent_calls.py), and this report is a labelled hint.

Runs inside the candidate process; `cupti` is imported lazily because it needs a GPU driver. On CPU-only test
hosts (device_type "cpu") `HostTimer` stands in: the host clock, no kernels.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluator.both_sides.launches import Launch
from evaluator.both_sides.stats import merge_intervals


@dataclass
class TimedSeries:
    samples_ms: list[float] = field(default_factory=list)
    activities: list[int] = field(default_factory=list)  # GPU activities recorded per call
    launches: list[list[Launch]] = field(default_factory=list)  # kernels of each timed call (CUPTI only)


def _dims(a: Any, prefix: str) -> tuple[int, int, int]:
    return tuple(int(getattr(a, f"{prefix}_{axis}", 0) or 0) for axis in "xyz")  # type: ignore[return-value]


class CuptiTimer:
    """Collects CONCURRENT_KERNEL, MEMCPY and MEMSET activity records (these kinds do not serialise kernels)."""

    method = "cupti"

    def __init__(self) -> None:
        from cupti import cupti  # lazy: importing needs libcupti and a driver

        self._cupti = cupti
        # (start, end, launch or None for memcpy/memset)
        self.records: list[tuple[int, int, Launch | None]] = []
        self.functions: list[tuple[int, str]] = []  # (module id, function name) of every function loaded
        # module id -> sha256 of its image, of every module loaded; None when this CUPTI gives no module records
        self.modules: dict[int, str] | None = None
        self.footprints: set[tuple[str, int, int]] = set()  # (kernel name, registers, static shared) as launched
        kernel = cupti.ActivityKind.CONCURRENT_KERNEL
        self._kinds = [kernel, cupti.ActivityKind.MEMCPY, cupti.ActivityKind.MEMSET]
        function = getattr(cupti.ActivityKind, "FUNCTION", None)

        def requested() -> tuple[int, int]:
            return 8 * 1024 * 1024, 0

        def completed(activities: list[Any]) -> None:
            for a in activities:
                kind = getattr(a, "kind", None)
                if function is not None and kind == function:
                    self.functions.append((int(getattr(a, "module_id", 0) or 0), str(getattr(a, "name", ""))))
                    continue
                start, end = getattr(a, "start", None), getattr(a, "end", None)
                if start is not None and end is not None and end >= start:
                    launch = None
                    if kind == kernel:
                        launch = Launch(str(getattr(a, "name", "")), _dims(a, "grid"), _dims(a, "block"))
                        self.footprints.add(
                            (
                                launch[0],
                                int(getattr(a, "registers_per_thread", 0) or 0),
                                int(getattr(a, "static_shared_memory", 0) or 0),
                            )
                        )
                    self.records.append((int(start), int(end), launch))

        cupti.activity_register_callbacks(requested, completed)
        for kind in self._kinds:
            cupti.activity_enable(kind)
        if function is not None:
            try:
                cupti.activity_enable(function)
                self._kinds.append(function)
            except Exception:  # noqa: BLE001, S110 - function records only sharpen the identity check
                pass
        self._subscriber = self._watch_module_loads(cupti)

    def _watch_module_loads(self, cupti: Any) -> Any:
        """Record the sha256 of every module's image as the driver loads it: CUPTI's resource callback for a module
        load passes the image (its MODULE activity kind produces no records). Subscribed before the candidate's code
        is loaded, so every module that could define one of its kernels is seen. None, with `modules` None, where
        this CUPTI refuses the subscription (the parent then says the images were not checked)."""

        def on_resource(userdata: Any, domain: Any, cbid: Any, data: Any) -> None:
            if cbid != cupti.CallbackIdResource.MODULE_LOADED or self.modules is None:
                return
            module_id, digest = module_image(data)
            if len(self.modules) < MAX_MODULES:
                self.modules[module_id] = digest

        try:
            subscriber = cupti.subscribe(on_resource, None)
            cupti.enable_callback(1, subscriber, cupti.CallbackDomain.RESOURCE, cupti.CallbackIdResource.MODULE_LOADED)
        except Exception:  # noqa: BLE001 - without module images the parent says they were not checked
            return None
        self.modules = {}
        return subscriber

    def now(self) -> int:
        return int(self._cupti.get_timestamp())

    def flush(self) -> None:
        self._cupti.activity_flush_all(1)

    def window(self, t0: int, t1: int) -> tuple[float, int, list[Launch]]:
        """(ms of GPU activity, activities, kernel launches) inside [t0, t1]; call `flush` first."""
        inside = [r for r in self.records if r[0] >= t0 and r[1] <= t1]
        return (
            merge_intervals([(r[0], r[1]) for r in inside]) / 1e6,
            len(inside),
            [r[2] for r in inside if r[2] is not None],
        )

    def close(self) -> None:
        self.flush()
        for kind in self._kinds:
            try:
                self._cupti.activity_disable(kind)
            except Exception:  # noqa: BLE001, S110 - teardown must not mask the measurement
                pass
        if self._subscriber is not None:
            try:
                self._cupti.unsubscribe(self._subscriber)
            except Exception:  # noqa: BLE001, S110 - teardown must not mask the measurement
                pass


# A device ELF larger than this is not hashed (its digest is then "", which matches no build): the builds the
# evaluator makes are far smaller, and the hash runs in the candidate process as the module loads. Past
# MAX_MODULES loads no more are recorded: a module with no record matches no build either.
MAX_IMAGE_BYTES = 256 * 1024 * 1024
MAX_MODULES = 4096
# CUpti_ModuleResourceData on x86-64: uint32 moduleId, padding, size_t cubinSize at 8, const char *pCubin at 16;
# CUpti_ResourceData: the context, the resource handle, then the descriptor pointer at 16.
_SIZE_AT, _IMAGE_AT, _DESCRIPTOR_AT = 8, 16, 16


def module_image(data: Any) -> tuple[int, str]:
    """(module id, sha256 of its image) from a MODULE_LOADED callback's data, read while the callback runs (the
    image is valid only then); the digest is "" when the image is absent or too large."""
    import hashlib

    module_id, image = module_image_bytes(data)
    return module_id, hashlib.sha256(image).hexdigest() if image else ""


def module_image_bytes(data: Any) -> tuple[int, bytes]:
    """(module id, a copy of its image) from a MODULE_LOADED callback's data; no bytes when the image is absent or
    larger than MAX_IMAGE_BYTES."""
    import ctypes

    if hasattr(data, "resource_descriptor"):
        descriptor = int(data.resource_descriptor or 0)
    else:
        descriptor = ctypes.c_void_p.from_address(int(data) + _DESCRIPTOR_AT).value or 0
    if not descriptor:
        return 0, b""
    module_id = ctypes.c_uint32.from_address(descriptor).value
    size = ctypes.c_size_t.from_address(descriptor + _SIZE_AT).value
    address = ctypes.c_void_p.from_address(descriptor + _IMAGE_AT).value or 0
    if not address or not 0 < size <= MAX_IMAGE_BYTES:
        return module_id, b""
    return module_id, ctypes.string_at(address, size)


class HostTimer:
    """The host clock, for CPU-only test hosts (device_type "cpu"): no activity records, no kernels."""

    method = "host_clock"
    records: list[tuple[int, int, Launch | None]] = []
    functions: list[tuple[int, str]] = []
    modules: dict[int, str] | None = None
    footprints: frozenset[tuple[str, int, int]] = frozenset()

    def now(self) -> int:
        return time.perf_counter_ns()

    def flush(self) -> None:
        pass

    def window(self, t0: int, t1: int) -> tuple[float, int, list[Launch]]:
        return (t1 - t0) / 1e6, 1, []

    def close(self) -> None:
        pass


def make_timer() -> tuple[CuptiTimer | None, str]:
    """A CUPTI timer, or None and the reason it is unavailable (then CUDA events are used)."""
    try:
        return CuptiTimer(), ""
    except Exception as exc:  # noqa: BLE001 - any failure here means "fall back", with the reason recorded
        return None, f"CUPTI unavailable ({type(exc).__name__}: {exc}); timed with CUDA events"


def time_interleaved(
    calls: Mapping[str, Callable[[int], Any]],
    *,
    warmup: int,
    iters: int,
    flush_l2: Callable[[], Any],
    before_call: Callable[[str, int], Any] | None = None,
    after_call: Callable[[str, int], Any] | None = None,
    timer: CuptiTimer | HostTimer | None = None,
    sync: Callable[[], Any] | None = None,
) -> dict[str, TimedSeries]:
    """Time each named call `iters` times after `warmup` untimed rounds, alternating between the names.

    `calls[name](i)` makes call number i. `before_call(name, i)` and `after_call(name, i)` run outside the timed
    window (inputs refreshed and outputs poisoned before; the trusted parent's checks after). With `timer=None`,
    CUDA events on the current stream plus a device synchronise are used.
    """
    import torch

    synchronize = sync or torch.cuda.synchronize
    names = list(calls)
    windows: list[tuple[str, int, int]] = []
    series = {n: TimedSeries() for n in names}
    for i in range(warmup + iters):
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            if before_call is not None:
                before_call(name, i)
            flush_l2()
            synchronize()
            if timer is not None:
                t0 = timer.now()
                calls[name](i)
                synchronize()
                t1 = timer.now()
                if i >= warmup:
                    windows.append((name, t0, t1))
            else:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                calls[name](i)
                end.record()
                synchronize()
                if i >= warmup:
                    series[name].samples_ms.append(float(start.elapsed_time(end)))
                    series[name].activities.append(-1)
            if after_call is not None:
                after_call(name, i)
    if timer is not None:
        timer.flush()
        for name, t0, t1 in windows:
            ms, activities, launches = timer.window(t0, t1)
            series[name].samples_ms.append(ms)
            series[name].activities.append(activities)
            series[name].launches.append(launches)
    return series


def l2_flusher(device: Any) -> Callable[[], Any]:
    """A function that writes twice the device's L2 size, evicting whatever the last call left there."""
    import torch

    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 1024 * 1024)
    buf = torch.empty(2 * l2 // 4 + 1024, dtype=torch.int32, device=device)
    flush: Callable[[], Any] = buf.zero_
    return flush
