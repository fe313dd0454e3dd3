"""Integrity decisions over what the trusted side observed: pure functions, no GPU, no processes.

The candidate's library runs inside the process that times it, so anything that process reports can be forged.
These functions turn independent observations into holds (the evaluation is not ranked; the reason is shown)
or failures (the verdict fails with the reason):

- which kernels ran in a candidate call, against the kernels compiled from the submission (class 2);
- the trusted parent's clock over batches of calls, against the candidate process's GPU timer (classes 3, 4);
- Nsight Compute's time of the profiled call, against the same timer (class 4);
- the launches of the profiled call, against those of the timed calls (class 5);
- L2 persistence the candidate left set (class 6);
- the ranked figures of every workload against what the GPU can physically do (datasheet peak and bandwidth).

`docs/threat-model.md` says which attack each one answers and what stays undefended.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

from evaluator.both_sides.launches import Launch
from evaluator.both_sides.verdict import FootprintCheck, KernelFootprint
from evaluator.both_sides.verdict import IntegrityHold as Hold
from evaluator.checks.physical_limits import PhysicalLimits

# Hold codes (the verdict's integrity.holds[].code; the portal shows the message).
TIMER_DISAGREEMENT = "timer_disagreement"
HOST_TIME = "host_time"
PROFILE_MISMATCH = "profile_mismatch"
L2_PERSISTENCE = "l2_persistence"
INCONSISTENT_FIGURES = "inconsistent_figures"
PROFILE_FAILED = "profile_failed"
BEYOND_PHYSICAL_LIMIT = "beyond_physical_limit"
HOLD_CODES: tuple[str, ...] = (
    TIMER_DISAGREEMENT,
    HOST_TIME,
    PROFILE_MISMATCH,
    L2_PERSISTENCE,
    INCONSISTENT_FIGURES,
    PROFILE_FAILED,
    BEYOND_PHYSICAL_LIMIT,
)
# A ranked row's speedup must be the trusted baseline over its latency, and its TFLOP/s the task's FLOPs over the
# same latency, to this relative tolerance (they are computed from one latency; a gap means a figure was changed).
CONSISTENCY_TOLERANCE = 0.01

# The candidate-process timer may read lower than an outside clock by launch and synchronisation overhead, never by
# a factor: the outside per-call time may exceed the GPU time by this factor plus HOST_SLACK_MS before it holds.
# The slack sits between what a busy host adds to an honest call and what the held tricks add: on the H200 an
# honest FP8 GEMM at M=128 read up to 0.064 ms above 1.5x its GPU time with 14 of 16 cores loaded (held under the
# old 0.05 ms minimum, docs/runs/integrity/h200-2026-12-05/holds/), the timer forgeries 0.78 ms and more, hidden host work
# 250 ms (docs/runs/integrity/h200-2026-12-04/). What the slack lets through ranks on the parent's clock anyway.
CLOCK_MARGIN = 1.5
HOST_SLACK_MS = 0.25
# Nsight Compute's gpu__time_duration of the profiled call against the ranked latency, which the trusted clock
# bounds; a profiled path faster or slower than the timed one by more than this is held, which also bounds what a
# kernel gains by running other code only when it is not profiled. The ranked latency also holds the host's own cost
# of driving each call, which the profiler never sees: on the smallest workloads (kernels of 0.05 ms) honest
# calls read 0.74-0.88 of it on H100s, held once at 0.738 (docs/runs/integrity/h100-2026-12-06j/). The faster side
# is therefore judged against the ranked latency less the host floor the trusted baseline process measured.
NCU_MARGIN = 0.25
# Share of timed calls whose output the trusted side compares with the reference, chosen after each call returned:
# with 50 timed calls, a kernel that skips a fifth of them (10) escapes with probability 0.5**10 < 0.1%.
CHECK_FRACTION = 0.5
# References of the checked calls are computed before the candidate process starts and held on the device.
CHECK_MEMORY_BYTES = 4 << 30


# --------------------------------------------------------------------------- class 1: which calls are checked


class CheckChooser:
    """Decides for each timed call whether its output is compared with the reference.

    Lives in the trusted parent with its own random source, and the candidate process is never told: every call's
    outputs stay in memory the parent lends until the parent has copied the ones it compares
    (evaluator/measure/lent_calls.py), so nothing in the candidate's process can know which calls are looked at."""

    def __init__(self, fraction: float = CHECK_FRACTION, rng: random.Random | None = None) -> None:
        if not 0.0 < fraction <= 1.0:
            raise ValueError("fraction must be in (0, 1]")
        self.fraction = fraction
        self._rng = rng or random.SystemRandom()

    def check(self) -> bool:
        return self._rng.random() < self.fraction


def miss_probability(calls: int, skipped_share: float, fraction: float = CHECK_FRACTION) -> float:
    """Chance that a kernel skipping `skipped_share` of `calls` timed calls has none of its skipped calls checked."""
    skipped = math.floor(calls * skipped_share)
    return (1.0 - fraction) ** skipped


# --------------------------------------------------------------------------- class 2: only the submission's kernels


def matches_submission(name: str, candidate_kernels: Iterable[str]) -> bool:
    """Whether a kernel name as a tool printed it is one of the submission's (mangled names from the SASS).

    CUPTI and Nsight Compute (with --print-kernel-base mangled) print mangled names; a demangled one
    ("void ns::k<8>(int, float*)") is matched by its function identifier inside a mangled name, so that a tool
    printing the other form cannot fail an honest kernel."""
    own = set(candidate_kernels)
    if name in own:
        return True
    base = _identifier(name)
    if not base or base == name:
        return False
    token = f"{len(base)}{base}"
    return any(token in k or k == base for k in own)


def _identifier(demangled: str) -> str:
    head = demangled.split("(", 1)[0].strip()
    depth, cut = 0, []
    for ch in head:  # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            cut.append(ch)
    words = "".join(cut).split()
    return words[-1].split("::")[-1] if words else ""


def foreign_kernels(launched: Iterable[str], candidate_kernels: Iterable[str]) -> list[str]:
    """Names of kernels that ran in a candidate call but are not functions of the submission's cubin."""
    own = list(candidate_kernels)
    seen: list[str] = []
    for name in launched:
        if name not in seen and not matches_submission(name, own):
            seen.append(name)
    return seen


def defined_twice(
    functions: Iterable[tuple[int, str]], launched: Iterable[str], candidate_kernels: Iterable[str]
) -> list[str]:
    """Launched kernel names of the submission that more than one loaded module defines.

    `functions` are CUPTI's FUNCTION records, (module id, name). A module loaded at run time that gives its kernel
    one of the submission's names could launch under that name: identity is the module, not the name."""
    own = set(candidate_kernels)
    modules: dict[str, set[int]] = {}
    for module, name in functions:
        modules.setdefault(name, set()).add(module)
    return [n for n in dict.fromkeys(launched) if n in own and len(modules.get(n, ())) > 1]


def defined_by_other_code(
    functions: Iterable[tuple[int, str]],
    images: Mapping[int, str],
    launched: Iterable[str],
    candidate_kernels: Iterable[str],
    built: Collection[str],
) -> list[str]:
    """Launched kernel names of the submission that a loaded module whose image is none of the build's defines.

    `functions` are CUPTI's FUNCTION records, (module id, name); `images` what its module-load callback recorded,
    module id -> sha256 of the module's image ("" when it could not be read); `built` the sha256 of each device
    ELF the trusted side took from the build. A module loaded at run time can give its kernel the submission's
    name and footprint, and with lazy loading the submission's own module need never load, so neither a second
    definition nor the footprint shows it: its image does. A defining module with no image record is not the
    build's either."""
    own = set(candidate_kernels)
    allowed = set(built)
    others: dict[str, set[int]] = {}
    for module, name in functions:
        if name in own and images.get(module, "") not in allowed:
            others.setdefault(name, set()).add(module)
    return [n for n in dict.fromkeys(launched) if n in others]


# The driver reserves 1 KB of shared memory per block from sm_80 on; cuobjdump's SHARED counts it for some
# functions and not others, and a launch record may or may not: a difference of exactly that much is allowed.
RESERVED_SHARED_BYTES = 1024


# A launch record never shows fewer than 16 registers per thread: on the H200, kernels compiled with 8 and 13
# registers launched with 16, while 30, 32 and 168 launched as compiled (docs/runs/integrity/h200-2026-12-01b/).
MIN_LAUNCH_REGISTERS = 16


def footprint_checks(
    launched: Iterable[tuple[str, int, int]], compiled: dict[str, list[KernelFootprint]]
) -> list[FootprintCheck]:
    """Each launched (name, registers, static shared bytes) that carries one of the submission's names, checked
    against the footprints its cubins give that name.

    A module loaded at run time can give its kernel the submission's name (and the submission's own function need
    never run, so no second definition shows): a function compiled elsewhere has its own register count and
    static shared memory. This is a fingerprint, not a proof: a forger who matches both passes it (the profiled
    call's instruction check is the stronger test; docs/threat-model.md)."""
    checks: dict[tuple[str, int, int], FootprintCheck] = {}
    for name, registers, shared in launched:
        prints = compiled.get(name)
        if not prints or (name, registers, shared) in checks:
            continue
        ok = any(
            registers == max(p.registers, MIN_LAUNCH_REGISTERS)
            and abs(shared - p.shared_bytes) in (0, RESERVED_SHARED_BYTES)
            for p in prints
        )
        checks[(name, registers, shared)] = FootprintCheck(name, registers, shared, list(prints), ok)
    return list(checks.values())


def describe_footprint(check: FootprintCheck) -> str:
    compiled = " or ".join(f"{p.registers} registers and {p.shared_bytes} bytes" for p in check.compiled)
    return (
        f"a kernel named {_short(check.name)} ran with {check.registers} registers and {check.static_shared_bytes} "
        f"bytes of static shared memory, but the submission's {_short(check.name, 40)} was compiled with {compiled} "
        "(shared memory may differ by the 1 KB the driver reserves, no more): it is not the submission's compiled code, which "
        "is the only code that may do the work"
    )


def describe_elsewhere(name: str) -> str:
    return (
        f"the kernel named {_short(name)} that ran came from a module whose image is none of the build's device "
        "code, so it is not the submission's compiled code: kernels are identified by their code, and only the "
        "compiled submission counts"
    )


def same_code(profiled_opcodes: Iterable[str], static_opcodes: Iterable[str]) -> bool:
    """Whether a profiled kernel is the submission's compiled function: the same instructions (base opcodes,
    counted), as Nsight Compute's source page and cuobjdump list them. The name alone proves nothing: a module
    loaded at run time can give its own kernel the submission's name."""
    base = [op.split(".", 1)[0] for op in profiled_opcodes]
    return Counter(base) == Counter(op.split(".", 1)[0] for op in static_opcodes)


def describe_foreign(names: Sequence[str], *, where: str) -> str:
    shown = ", ".join(_short(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (
        f"{where} ran {'a kernel' if len(names) == 1 else 'kernels'} not compiled from the submission ({shown}); "
        "only the submission's own kernels may do the work (memcpy and memset are allowed)"
    )


# --------------------------------------------------------------------------- classes 3 and 4: an outside clock


def trusted_clock_hold(
    *,
    reported_ms: float | None,
    trusted_ms: float | None,
    margin: float = CLOCK_MARGIN,
    slack_ms: float = HOST_SLACK_MS,
) -> Hold | None:
    """Hold when the outside clock's time per call is well above what the candidate process reported.

    `trusted_ms` is the parent's wall clock over a batch of calls divided by the calls, so it includes host work,
    helper threads joined before the batch ended, and launch overhead; it can only be larger than honest GPU time
    by overhead, which `margin` and `slack_ms` allow. The code is `host_time` whatever the cause (host work or a
    forged timer look the same from outside); Nsight Compute's own GPU time tells them apart (`ncu_hold`)."""
    if reported_ms is None or trusted_ms is None or reported_ms <= 0:
        return None
    if trusted_ms <= reported_ms * margin + slack_ms:
        return None
    ratio = trusted_ms / reported_ms
    return Hold(
        HOST_TIME,
        f"the evaluator's own clock measured {trusted_ms:.4g} ms per call, {ratio:.1f}x the {reported_ms:.4g} ms the "
        "GPU timer in the candidate's process reported: work done outside the timed kernels (on the CPU, in another "
        "thread or while the evaluator drew the inputs) or a tampered timer; the evaluator's figure ranks and the result "
        "is held",
    )


def ncu_hold(
    *,
    reported_ms: float | None,
    ncu_ms: float | None,
    margin: float = NCU_MARGIN,
    slower_only: bool = False,
    host_floor_ms: float | None = None,
) -> Hold | None:
    """Hold when Nsight Compute's time of the profiled call and the timed calls' ranked latency disagree beyond
    `margin`: the profiled code is not the timed code, or the timing was tampered with.

    `slower_only`: hold only when the profiled call is the slower one (the timed calls ran faster than the
    submission's own code can: work laundered through kernels the candidate's records did not show). Used for
    kernels profiled only to cross-check the timing, whose timed calls may include copies and fills that Nsight
    Compute, which times kernels, does not count.

    `host_floor_ms`: the per-call host cost the trusted baseline process measured on this host (its ranked time less
    its GPU time; no candidate code runs there). The ranked latency includes that much time the profiler, which
    times kernels, never sees, so a profiled call faster than the timed ones is judged against the ranked latency
    less the floor, and never less than half of it: a floor is a few microseconds, what it may excuse stays small."""
    if not reported_ms or not ncu_ms:
        return None
    ratio = ncu_ms / reported_ms
    floor = min(max(host_floor_ms or 0.0, 0.0), reported_ms / 2)
    faster = ncu_ms / (reported_ms - floor)
    if ratio - 1.0 <= margin and (slower_only or 1.0 - faster <= margin):
        return None
    less_floor = f", {faster:.2f}x once the host's own {floor:.3g} ms a call is left out" if ratio < 1 and floor else ""
    return Hold(
        TIMER_DISAGREEMENT,
        f"Nsight Compute timed the profiled call at {ncu_ms:.4g} ms, {ratio:.2f}x the {reported_ms:.4g} ms of the "
        f"timed calls{less_floor} (allowed: within {margin:.0%}): the profiled call does not describe the timed "
        "ones, or the timing cannot be trusted; the result is held",
    )


def profile_failed_hold(reason: str) -> Hold:
    """The profiled call, which cross-checks the timed figures, gave nothing to read for a reason on the
    candidate's side of the sandbox: without it the ranked latency rests on records from the candidate's process."""
    return Hold(
        PROFILE_FAILED,
        f"the profiled call that cross-checks the timed figures gave nothing to read ({reason[:300]}); the timing "
        "could not be checked against Nsight Compute and the result is held",
    )


# --------------------------------------------------------------------------- class 5: profiled = timed


def launch_mismatch(profiled: Sequence[Launch], timed: Sequence[Sequence[Launch]]) -> Hold | None:
    """Hold when the profiled call's launches (kernel, grid, block) differ from those of any timed call."""
    if not profiled or not timed:
        return None
    want = Counter(profiled)
    for index, call in enumerate(timed):
        got = Counter(call)
        if got != want:
            extra = sorted(got - want, key=str)
            missing = sorted(want - got, key=str)
            parts = []
            if missing:
                parts.append("profiled but not timed: " + _launches(missing))
            if extra:
                parts.append("timed but not profiled: " + _launches(extra))
            return Hold(
                PROFILE_MISMATCH,
                f"the kernels launched under the profiler differ from those of timed call {index + 1} "
                f"({'; '.join(parts)}): the instruction check does not describe the timed code, so it is not "
                "verified and the result is held",
            )
    return None


# --------------------------------------------------------------------------- class 6: L2 persistence


def l2_hold(persisting_bytes: int) -> Hold | None:
    if persisting_bytes <= 0:
        return None
    return Hold(
        L2_PERSISTENCE,
        f"the candidate set a persisting-L2 limit of {persisting_bytes} bytes; it was reset before every timed call "
        "(inputs may not be kept in L2 across calls) and the result is held for review",
    )


def _short(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _launches(items: Sequence[Launch]) -> str:
    return ", ".join(f"{_short(x.name, 60)} grid {x.grid} block {x.block}" for x in items[:3])


# --------------------------------------------------------------------------- the figures of a row agree


def consistency_hold(
    *,
    latency_ms: float | None,
    baseline_latency_ms: float | None,
    speedup: float | None,
    tflops: float | None,
    flops: float | None,
    tolerance: float = CONSISTENCY_TOLERANCE,
) -> Hold | None:
    """Hold when speedup, latency, TFLOP/s and the trusted baseline do not describe one measurement:
    two rows at the same TFLOP/s with speedups 2x apart cannot both be true."""
    problems = []
    if latency_ms and baseline_latency_ms and speedup:
        expected = baseline_latency_ms / latency_ms
        if abs(speedup / expected - 1.0) > tolerance:
            problems.append(
                f"speedup {speedup:.4g}x, but the library's {baseline_latency_ms:.4g} ms over the kernel's "
                f"{latency_ms:.4g} ms is {expected:.4g}x"
            )
    if latency_ms and flops and tflops:
        expected = flops / (latency_ms * 1e-3) / 1e12
        if abs(tflops / expected - 1.0) > tolerance:
            problems.append(f"{tflops:.4g} TFLOP/s, but the task's FLOPs in {latency_ms:.4g} ms is {expected:.4g}")
    if not problems:
        return None
    return Hold(INCONSISTENT_FIGURES, "the figures of this result disagree: " + "; ".join(problems))


# --------------------------------------------------------------------------- what the GPU can physically do


def physical_limit_hold(*, latency_ms: float | None, tflops: float | None, limits: PhysicalLimits) -> Hold | None:
    """Hold a ranked row whose rate is above the GPU's dense tensor peak for the task's dtype, or whose latency is
    below the time its inputs and outputs take to cross the HBM once: no kernel does either, so a figure there
    was made, not measured (work done where no clock looked, or a forged timer). Both figures are named."""
    problems = []
    gpu = limits.gpu_name or "this GPU"
    if tflops and limits.peak_tflops and tflops > limits.peak_tflops:
        problems.append(
            f"{tflops:.4g} TFLOP/s is above the {limits.peak_tflops:.4g} TFLOP/s dense {limits.peak_dtype} "
            f"tensor-core peak of the {gpu} (datasheet)"
        )
    floor = limits.min_ms
    if latency_ms and floor and latency_ms < floor:
        problems.append(
            f"{latency_ms:.4g} ms per call is less than the {floor:.4g} ms that reading the inputs and writing the "
            f"outputs once ({limits.io_bytes / 1e6:.4g} MB) takes at the {gpu}'s {limits.hbm_tbps:g} TB/s HBM "
            "bandwidth (datasheet)"
        )
    if not problems:
        return None
    return Hold(
        BEYOND_PHYSICAL_LIMIT,
        "the ranked figures are beyond what the GPU can do: " + "; ".join(problems) + "; the result is held",
    )
