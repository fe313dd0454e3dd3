"""The verdicts `seed_leaderboard` makes up, built as the evaluator's own typed records (evaluator/both_sides/verdict.py) so a
demo row obeys the rules a real one does: stages that ran or not as its status says, a compile log, SASS counts
that match the instruction check (verified and full only with the target families present and executed), figures
from one measurement (speedup = baseline latency / latency, TFLOP/s = the task's FLOPs / latency) within what the
GPU can do for what the kernel uses (the dense tensor peak for the task's dtype, the non-tensor peak when no
tensor-core instruction did the work, never faster than the tensors cross the HBM), a hold only with its reason.
The portal then reads each one exactly as a worker's (summarise_verdict), so no column is made up apart from it.

A made-up kernel is described by `DemoKernel`; `TaskFacts` holds what the rules need of a task's headline
workload on one GPU. Pure: no database."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluator.arch_check.ncu import disclose, tensor_evidence
from evaluator.both_sides import verdict as vm
from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.taskdata import load_task
from evaluator.checks import peaks
from evaluator.checks.physical_limits import limits_for

EVALUATOR_VERSION = "0.1.0"
# The least share of the task's FLOPs that verified tensor cores do; token rows stay under it.
SHARE_THRESHOLD = 0.5
# What demo figures keep clear of the physical limits by (a real kernel never sits on them).
HEADROOM = 0.9
_COMPILE_ERRORS = (
    'kernel.cu(41): error: identifier "tile_k" is undefined',
    "kernel.cu(88): error: too few arguments in function call",
    'kernel.cu(17): error: expected a ";"',
)


@dataclass(frozen=True)
class TaskFacts:
    """A task's headline workload on one GPU: what a demo verdict's figures must agree with."""

    slug: str
    headline: str  # workload uuid
    axes: dict[str, int]
    flops: float  # the task's FLOPs on the headline workload
    tensor_tflops: float  # dense tensor-core peak for the task's dtype on this GPU
    simt_tflops: float  # the fastest rate without tensor cores on this GPU
    min_ms: float  # the tensors across the HBM once

    def max_tflops(self, uses_tensor_cores: bool) -> float:
        """The highest rate a demo kernel may show: under the physical limits, with headroom."""
        ceiling = self.tensor_tflops if uses_tensor_cores else self.simt_tflops
        return HEADROOM * min(ceiling, self.flops / (self.min_ms * 1e9))


def task_facts(tasks_dir: Path, slug: str, gpu: str) -> TaskFacts:
    task = load_task(Path(tasks_dir) / slug)
    headline = next((w for w in task.workloads if w.uuid == task.headline_workload), task.workloads[0])
    limits = limits_for(task.definition, headline, gpu)
    # B200's datasheet states no non-tensor rate: a tenth of its dense BF16 peak stands in, well above FP32's.
    simt = peaks.non_tensor_peak_tflops(gpu) or 0.1 * (peaks.peak_tflops(gpu) or 0.0)
    tensor = limits.peak_tflops or peaks.peak_tflops(gpu) or 0.0
    return TaskFacts(
        slug=slug,
        headline=headline.uuid,
        axes=dict(headline.axes),
        flops=task.flops_for(headline),
        tensor_tflops=tensor,
        simt_tflops=simt,
        min_ms=limits.min_ms or 1e-6,
    )


@dataclass(frozen=True)
class DemoKernel:
    status: vm.OverallStatus
    arch_status: vm.ArchStatus  # what the instruction check found (PASSED kernels only)
    full: bool  # verified with every family of the architecture's full rule
    rate: float  # TFLOP/s on the headline workload (PASSED kernels only; within TaskFacts.max_tflops)
    baseline_tflops: float  # the library's rate on the same workload
    hold: str = ""  # an integrity hold's plain reason; "" when not held


def uses_tensor_cores(arch_status: vm.ArchStatus) -> bool:
    """Whether a kernel with this instruction-check state did its work on tensor cores (verified only: token,
    not_executed and absent did most or all of it without them)."""
    return arch_status == vm.ArchStatus.VERIFIED


def demo_verdict(*, facts: TaskFacts, arch: str, gpu: str, source_sha256: str, source_bytes: int, created_at: str,
                 kernel: DemoKernel) -> vm.Verdict:  # fmt: skip
    """A verdict the evaluator could have written for `kernel` (`vm.to_dict` makes the stored document)."""
    status = kernel.status
    compiled = status not in (vm.OverallStatus.COMPILE_ERROR, vm.OverallStatus.POLICY_REJECTED)
    ran = compiled and status != vm.OverallStatus.STATIC_ONLY
    passed = status == vm.OverallStatus.PASSED
    families = ARCHES[arch].families
    stages = [vm.StageRecord("policy", vm.StageState.PASSED, 0.02)]
    stages.append(vm.StageRecord("compile", vm.StageState.PASSED if compiled else vm.StageState.FAILED, 21.0))
    stages.append(vm.StageRecord("sass", vm.StageState.PASSED if compiled else vm.StageState.SKIPPED, 0.8))
    correctness = vm.StageState.PASSED if passed else vm.StageState.FAILED if ran else vm.StageState.SKIPPED
    stages.append(vm.StageRecord("correctness", correctness, 6.0 if ran else 0.0))
    later = vm.StageState.PASSED if passed else vm.StageState.SKIPPED
    stages += [
        vm.StageRecord("arch", later, 14.0 if passed else 0.0),
        vm.StageRecord("timing", later, 9.0 if passed else 0.0),
    ]
    output = "" if compiled else "\n".join(_COMPILE_ERRORS[int(source_sha256[:2], 16) % len(_COMPILE_ERRORS) :][:1])
    compile_result = vm.CompileResult(
        ok=compiled, command=["nvcc", f"-arch={arch}", "-O3", "kernel.cu"], returncode=0 if compiled else 1,
        seconds=21.0, output=output or "ptxas info    : Used 168 registers", nvcc_version="13.0",
    )  # fmt: skip
    present = passed and kernel.arch_status != vm.ArchStatus.ABSENT
    sass = None
    if compiled:
        counts = {name: (64 if present else 0) for name in families}
        sass = vm.SassCounts(
            arch=arch, families=counts, opcodes={}, target_families=list(families),
            target_count=sum(counts.values()), kernels=["demo_kernel"], instructions=4096,
        )  # fmt: skip
    workloads, arch_check, integrity = [], vm.ArchCheck(vm.ArchStatus.NOT_REQUESTED), None
    if ran:
        workload = vm.WorkloadResult(uuid=facts.headline, axes=facts.axes, status=vm.Status(status.value))
        workload.correctness = vm.Correctness(max_absolute_error=0.004 if passed else 3.5, trials=3,
                                              total_elements=1 << 20, failing_elements=0 if passed else 4096)  # fmt: skip
        if passed:
            latency = facts.flops / (kernel.rate * 1e9)
            baseline = facts.flops / (kernel.baseline_tflops * 1e9)
            speedup = baseline / latency
            workload.performance = vm.Performance(
                latency_ms=latency, baseline_latency_ms=baseline, speedup_factor=speedup,
                speedup_ci95=[speedup * 0.98, speedup * 1.02], baseline="cublas", tflops=kernel.rate,
                fraction_of_peak=kernel.rate / facts.tensor_tflops if facts.tensor_tflops else None, baseline_measured_by="trusted process",
                in_process_latency_ms=latency, latency_from=vm.LATENCY_FROM_CANDIDATE_TIMER,
            )  # fmt: skip
            arch_check = _arch_check(kernel, facts, arch, gpu, latency)
            integrity = vm.Integrity(timed_calls=200, checked_calls=12, candidate_kernels=["demo_kernel"])
            if kernel.hold:
                integrity.holds.append(vm.IntegrityHold("timer_disagreement", kernel.hold))
        workloads.append(workload)
    document = vm.Verdict(
        evaluator_version=EVALUATOR_VERSION, task=facts.slug, arch=arch, status=status, created_at=created_at,
        source_sha256=source_sha256, source_bytes=source_bytes, stages_requested=list(vm.STAGES), stages=stages,
        compile=compile_result, sass=sass, workloads=workloads, arch_check=arch_check,
        environment=vm.Environment(gpu_name=gpu, driver_version="570.86.15", cuda_runtime="12.8", nvcc_version="13.0",
                                   torch_version="2.11.0") if ran else None,
        sandbox=vm.SandboxInfo(mode="bubblewrap", network=False, user="an unprivileged user"),
        integrity=integrity, notes=["synthetic: made up by seed_leaderboard --demo, never measured"],
    )  # fmt: skip
    return document


def _arch_check(kernel: DemoKernel, facts: TaskFacts, arch: str, gpu: str, latency_ms: float) -> vm.ArchCheck:
    state = kernel.arch_status
    spec = ARCHES[arch]
    executed = {vm.ArchStatus.VERIFIED, vm.ArchStatus.TOKEN}
    runs = state in executed
    full_families = spec.full_families if state == vm.ArchStatus.VERIFIED and kernel.full else frozenset()
    families = {
        name: vm.FamilyExecution(
            static=0 if state == vm.ArchStatus.ABSENT else 64,
            executed=(4096 if (name in full_families or (runs and name == spec.families[0])) else 0),
            predicated_on=(131072 if (name in full_families or (runs and name == spec.families[0])) else 0),
        )
        for name in spec.families
    }
    share = 0.97 if state == vm.ArchStatus.VERIFIED else 0.08 if state == vm.ArchStatus.TOKEN else 0.0
    check = vm.ArchCheck(
        status=state, workload=facts.headline, families=families, ptxbench_verified=runs,
        full=spec.is_full({n for n, f in families.items() if f.executed}), tensor_core_flops=share * facts.flops,
        task_flops=facts.flops, tensor_core_share=share, share_threshold=SHARE_THRESHOLD,
        ranked_latency_ms=latency_ms,
    )  # fmt: skip
    # The timed-rate evidence and its disclosure by the evaluator's own rules: against the datasheet's non-tensor
    # rate only (none for B200, so no claim either way), never the stand-in ceiling the draw uses.
    tensor_evidence(check, kernel.rate, peaks.non_tensor_peak_tflops(gpu))
    disclose(check)  # sets rests_on_profile; the demo keeps no notes
    return check


def draw_kernel(rng, facts: TaskFacts, *, status: str, arch_status: str, library_fraction: float, gpu: str,
                hold: str = "") -> DemoKernel:  # fmt: skip
    """A made-up kernel of `status`: a PASSED one gets a rate between 3% and 92% of what it may reach (a smooth
    beta draw) and never more than 2.5 times the library's (beyond that the portal holds it as implausible)."""
    state = vm.ArchStatus(arch_status) if arch_status else vm.ArchStatus.NOT_REQUESTED
    baseline = min(library_fraction * (peaks.peak_tflops(gpu) or 0.0), facts.max_tflops(True))
    if status != vm.OverallStatus.PASSED:
        return DemoKernel(vm.OverallStatus(status), vm.ArchStatus.NOT_REQUESTED, False, 0.0, baseline)
    ceiling = min(facts.max_tflops(uses_tensor_cores(state)), 2.5 * baseline)
    rate = ceiling * (0.03 + 0.89 * rng.betavariate(2.2, 2.8))
    full = state == vm.ArchStatus.VERIFIED and rng.random() < 0.7
    return DemoKernel(vm.OverallStatus.PASSED, state, full, rate, baseline, hold)
