"""What the parent concludes from one workload's candidate process once its rounds are over: the kernels that ran
against the submission's (identity and compiled footprint), and the holds on its ranked figures. Pure: no GPU,
no processes; `WorkloadRun` is the record evaluator/measure/candidate.py fills and evaluator/pipeline.py reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluator.arch_check.tensor_witness import GpmReading
from evaluator.both_sides import protocol
from evaluator.both_sides.launches import Launch
from evaluator.both_sides.verdict import FootprintCheck, IntegrityHold, KernelFootprint, Status, WorkloadResult
from evaluator.checks.integrity import (
    consistency_hold,
    defined_by_other_code,
    defined_twice,
    describe_elsewhere,
    describe_footprint,
    describe_foreign,
    footprint_checks,
    foreign_kernels,
    l2_hold,
    physical_limit_hold,
    trusted_clock_hold,
)
from evaluator.checks.physical_limits import PhysicalLimits


@dataclass
class WorkloadRun:
    """One workload's candidate process, as the verdict needs it."""

    result: WorkloadResult
    timing_seconds: float = 0.0
    limit_events: dict[str, int] = field(default_factory=dict)  # cgroup events of this process
    notes: list[str] = field(default_factory=list)
    sm_clock_mhz: tuple[int | None, int | None] | None = None  # (before, after) timing, when timed
    holds: list[IntegrityHold] = field(default_factory=list)
    timed_calls: int = 0
    checked_calls: int = 0
    sampled_calls: int = 0
    foreign_kernels: list[str] = field(default_factory=list)
    footprints: list[FootprintCheck] = field(default_factory=list)  # the submission's kernels as launched
    trusted_ms: float | None = None  # the ranked time per call: the parent's clock over the fastest batch
    timed_launches: list[list[Launch]] = field(default_factory=list)  # for the profiled-vs-timed comparison
    l2_persisting_bytes: int = 0
    # The GPU's tensor utilisation while the timing process serves the submission
    # (evaluator/arch_check/tensor_witness.py), the calls made in it, or why there is no reading.
    gpm: GpmReading | None = None
    gpm_reason: str = ""
    window_calls: int = 0


def judge_timing(
    run: WorkloadRun,
    in_process_ms: float | None,
    limits: PhysicalLimits,
    flops: float | None,
    slack_ms: float,
    l2: dict[str, Any],
) -> None:
    """The holds of one timed workload, on its ranked performance (`run.result.performance`): the candidate
    process's own figure far below the parent's clock (hidden work, or a forged timer), figures that disagree with
    each other, a figure beyond what the GPU can do, a persisting-L2 limit left set."""
    p = run.result.performance
    assert p is not None
    hold = trusted_clock_hold(reported_ms=in_process_ms, trusted_ms=run.trusted_ms, slack_ms=slack_ms)
    if hold is not None:
        run.holds.append(hold)
    figures = consistency_hold(
        latency_ms=p.latency_ms,
        baseline_latency_ms=p.baseline_latency_ms,
        speedup=p.speedup_factor,
        tflops=p.tflops,
        flops=flops,
    )
    if figures is not None:
        run.holds.append(figures)
    # On every workload, whatever the other checks said: the small ones are where a host-side bound binds least.
    beyond = physical_limit_hold(latency_ms=p.latency_ms, tflops=p.tflops, limits=limits)
    if beyond is not None:
        run.holds.append(beyond)
    run.l2_persisting_bytes = int(l2.get("changed_bytes") or 0)
    if l2.get("error"):
        run.notes.append(str(l2["error"]))
    persisting = l2_hold(run.l2_persisting_bytes)
    if persisting is not None:
        run.holds.append(persisting)


def check_kernels(
    msg: dict[str, Any],
    run: WorkloadRun,
    kernels: list[str] | None,
    compiled: dict[str, list[KernelFootprint]],
    built: frozenset[str] | None = None,
) -> bool:
    """Fail the workload when a kernel that is not the submission's ran in a trial, timed or batch call, or one
    carrying the submission's name ran with another footprint than the submission's compiled function, or came
    from a loaded module whose image is none of the build's device ELFs (`built`, their sha256)."""
    launches = msg["launches"]
    run.timed_launches = [protocol.launches_of(c) for c in launches.get("timed", [])]
    if msg["method"] != "cupti":
        if msg["method"] == "cuda_events":
            run.notes.append("kernel identity not checked: no CUPTI activity records on this host")
        return False
    if kernels is None:
        run.notes.append("kernel identity not checked: the submission's kernels are unknown (no static SASS)")
        return False
    calls = [protocol.launches_of(c) for part in ("trials", "timed", "batch") for c in launches.get(part, [])]
    names = [name for call in calls for name, _, _ in call]
    functions = [(int(f[0]), str(f[1])) for f in msg["functions"] if isinstance(f, list) and len(f) == 2]
    foreign = foreign_kernels(names, kernels)
    impostors = defined_twice(functions, names, kernels)
    images = protocol.images_of(msg.get("modules"))
    if images is None or built is None:
        run.notes.append(
            "module images not checked: "
            + ("this host's CUPTI gives no module records" if images is None else "the build's device code is unknown")
        )
        elsewhere: list[str] = []
    else:
        elsewhere = [n for n in defined_by_other_code(functions, images, names, kernels, built) if n not in impostors]
    ran = set(names)
    run.footprints = footprint_checks(
        [f for f in protocol.footprints_of(msg.get("footprints", [])) if f[0] in ran], compiled
    )
    changed = [c for c in run.footprints if not c.matches]
    if not foreign and not impostors and not elsewhere and not changed:
        return False
    run.foreign_kernels = (
        foreign
        + [f"{n} (also defined by another module)" for n in impostors]
        + [f"{n} (defined by a module that is not the submission's compiled code)" for n in elsewhere]
        + [f"{c.name} (not the submission's compiled code: other registers or shared memory)" for c in changed]
    )
    result = run.result
    result.status = Status.FOREIGN_KERNEL
    if foreign:
        result.message = describe_foreign(foreign, where="a candidate call")
    elif impostors:
        result.message = (
            f"a module loaded at run time defines the submission's kernel name {impostors[0]} too: kernels are "
            "identified by the module that holds them, and only the compiled submission counts"
        )
    elif elsewhere:
        result.message = describe_elsewhere(elsewhere[0])
    else:
        result.message = describe_footprint(changed[0])
    result.performance = None
    return True
