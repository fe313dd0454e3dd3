"""The verdict: everything one evaluation found, as typed records that serialise to one JSON document.

It extends the FlashInfer Trace evaluation record (a status per workload, max absolute/relative error,
latency, reference latency, speedup) with what PTXBench adds: policy findings, the compiler's command and
resource report, static SASS counts, the architecture check, timing statistics and the environment.
The JSON schema is `evaluator/verdict.schema.json` (written by evaluator/schema.py); docs/verdict.md explains each field.
A bad kernel is a verdict, never an exception: only broken infrastructure raises.

Used on both sides of the trust boundary, barely: the candidate process loads this module only because
evaluator/both_sides/stats.py names `TimingStats`; verdicts are built and written by the parent alone.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# 2: `Performance.reference_latency_ms` became `baseline_latency_ms` (docs/glossary.md: the library
# baseline's latency, not the PyTorch reference's). 3: for the same reason, `Performance.reference` became
# `baseline_timing` and `reference_measured_by` became `baseline_measured_by`. `from_dict` still reads documents of
# every earlier version (each renamed field names its old name).
SCHEMA_VERSION = 3


class Status(StrEnum):
    """Per-workload status: exactly FlashInfer Trace's evaluation statuses."""

    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"
    # A kernel not compiled from the submission (a library's, a module loaded at run time) ran in a candidate call.
    FOREIGN_KERNEL = "FOREIGN_KERNEL"


class OverallStatus(StrEnum):
    """The verdict's one-word summary: the workload statuses plus two that no single workload can carry."""

    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"
    # A kernel not compiled from the submission (a library's, a module loaded at run time) ran in a candidate call.
    FOREIGN_KERNEL = "FOREIGN_KERNEL"
    # The source broke a policy rule; nothing was compiled or run.
    POLICY_REJECTED = "POLICY_REJECTED"
    # Only CPU stages were requested (policy, compile, sass): nothing is claimed about correctness or speed.
    STATIC_ONLY = "STATIC_ONLY"


class ArchStatus(StrEnum):
    NOT_REQUESTED = "not_requested"  # the arch stage was not asked for, or its preconditions failed (see reason)
    ABSENT = "absent"  # no target family in the static SASS
    NOT_EXECUTED = "not_executed"  # present statically, zero predicated-on executions
    TOKEN = "token"  # noqa: S105 - executed, but the tensor cores did less than the threshold share of the task's FLOPs
    VERIFIED = "verified"  # executed and doing the work
    PROFILE_ERROR = "profile_error"  # Nsight Compute missing, no permission, crashed or gave an unreadable report


class StageState(StrEnum):
    PASSED = "passed"  # the stage ran and the candidate passed it
    FAILED = "failed"  # the stage ran and the candidate failed it
    SKIPPED = "skipped"  # requested, but an earlier stage's failure made it pointless
    NOT_RUN = "not_run"  # not requested


STAGES: tuple[str, ...] = ("policy", "compile", "sass", "correctness", "arch", "timing")
CPU_STAGES: tuple[str, ...] = ("policy", "compile", "sass")
GPU_STAGES: tuple[str, ...] = ("correctness", "arch", "timing")


@dataclass
class PolicyFinding:
    rule: str  # machine name of the rule, e.g. "forbidden-library", "dlopen", "include-path"
    message: str  # what is wrong, for people
    line: int | None = None  # 1-based line of the offending text, when there is one
    text: str = ""  # the offending source line, stripped and capped at 200 characters


@dataclass
class KernelResources:
    """ptxas -v report for one kernel."""

    name: str  # mangled name as ptxas prints it
    registers: int | None = None
    shared_bytes: int | None = None  # static shared memory ("smem")
    stack_frame_bytes: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    barriers: int | None = None


@dataclass
class CompileResult:
    ok: bool
    command: list[str]  # the nvcc argument vector, paths as used on the evaluating host
    returncode: int | None  # None when killed at the time limit
    seconds: float
    output: str  # compiler stdout+stderr, capped at 64 KiB
    output_truncated: bool = False
    timed_out: bool = False
    nvcc_version: str = ""
    resources: list[KernelResources] = field(default_factory=list)
    library_sha256: str | None = None
    cubin_sha256: str | None = None
    cached: bool = False  # the same source and flags compiled earlier on this host (evaluator/build/compile_cache.py)


@dataclass
class SassCounts:
    """Static counts from `cuobjdump --dump-sass` of the candidate's cubin."""

    arch: str
    families: dict[str, int]  # every known family -> instruction count in the SASS
    opcodes: dict[str, int]  # full target opcodes seen (e.g. "HGMMA.64x256x16.F32.BF16") -> count
    target_families: list[str]  # families the task/arch asks for
    target_count: int  # instructions of the target families
    kernels: list[str]  # SASS function names
    instructions: int  # all SASS instructions


@dataclass
class TimingStats:
    """One timed series: every sample plus its summary, never a lone mean."""

    method: str  # "cupti" (kernel activity records) or "cuda_events" (fallback, see notes)
    n: int
    median_ms: float
    q25_ms: float
    q75_ms: float
    iqr_ms: float
    min_ms: float
    max_ms: float
    mean_ms: float
    samples_ms: list[float]
    warmup: int
    kernels_per_call: float = 0.0  # mean number of GPU activities (kernels, memcpy, memset) per call


@dataclass
class Correctness:
    max_absolute_error: float | None = None
    max_relative_error: float | None = None
    relative_norm_error: float | None = None  # ||out-ref|| / ||ref||, worst trial
    relative_norm_bound: float | None = None
    failing_elements: int = 0  # worst trial
    total_elements: int = 0
    nan_count: int = 0
    inf_count: int = 0
    trials: int = 0  # trials that ran to completion
    inputs_modified: list[str] = field(default_factory=list)
    timed_outputs_checked: int = 0  # outputs of timed calls that were compared too


# Which figure `Performance.latency_ms` is.
LATENCY_FROM_CANDIDATE_TIMER = "candidate process timer"  # within the trusted clock's margin
LATENCY_FROM_TRUSTED_BOUND = "trusted clock bound"  # the in-process figure was lower than the trusted clock allows
LATENCY_FROM_TRUSTED_CLOCK = "trusted clock"  # a host_time hold: the parent's per-call clock itself
LATENCY_FROM_TRUSTED_BATCHES = "trusted batches"  # the parent's clock over batches on inputs it drew (both sides)


@dataclass
class Performance:
    latency_ms: float | None = None  # candidate median (FlashInfer's field)
    # Library baseline median. FlashInfer Trace calls it `reference_latency_ms` (its own format keeps that name,
    # mapped at the export); verdicts of schema_version 1 did too, and `from_dict` still reads them.
    baseline_latency_ms: float | None = field(default=None, metadata={"renamed_from": "reference_latency_ms"})
    speedup_factor: float | None = None  # baseline median / candidate median (FlashInfer's field)
    speedup_ci95: list[float] | None = None  # bootstrap 95% interval of the speedup
    baseline: str = ""  # baseline id, e.g. "cublas"
    candidate: TimingStats | None = None
    # The library baseline's timing stats (the baseline, docs/glossary.md; the reference is the PyTorch oracle that
    # correctness compares with, and is never timed).
    baseline_timing: TimingStats | None = field(default=None, metadata={"renamed_from": "reference"})
    tflops: float | None = None  # task FLOPs / latency_ms
    # tflops / the GPU's datasheet dense peak for the task's dtype (evaluator/checks/peaks.py)
    fraction_of_peak: float | None = None
    # Who measured `baseline_timing`: "trusted process" (a process that loads no submission code) or, in
    # verdicts before it, the candidate's own process ("candidate process").
    baseline_measured_by: str | None = field(
        default=None, metadata={"added": "schema_version 2", "renamed_from": "reference_measured_by"}
    )
    # The trusted process's own clock over back-to-back batches of library calls, minus their GPU time: the host
    # cost per call of a Python-driven call on this host right now (the trusted-clock check's slack scales with it).
    host_floor_ms: float | None = field(default=None, metadata={"added": "schema_version 2"})
    # The candidate process's own median (CUPTI or CUDA events), a hint that never ranks: `latency_ms` is the parent's
    # clock over batches (evaluator/measure/performance.py, rank_by_trusted_clock). `latency_from` names that figure.
    in_process_latency_ms: float | None = field(default=None, metadata={"added": "schema_version 2"})
    latency_from: str | None = field(default=None, metadata={"added": "schema_version 2"})


@dataclass
class WorkloadResult:
    uuid: str
    axes: dict[str, int]
    status: Status
    message: str = ""
    correctness: Correctness | None = None
    performance: Performance | None = None
    seconds: float = 0.0
    stdout_tail: str = ""  # last bytes the candidate process wrote (capped)
    stderr_tail: str = ""


@dataclass
class FamilyExecution:
    static: int  # instructions in the static SASS
    executed: int  # warp-level "Instructions Executed" summed over the family
    predicated_on: int  # "Predicated-On Thread Instructions Executed" summed over the family


@dataclass
class ArchCheck:
    status: ArchStatus
    reason: str = ""
    workload: str | None = None  # uuid of the profiled workload
    families: dict[str, FamilyExecution] = field(default_factory=dict)
    ptxbench_verified: bool = False  # PTXBench's rule alone: a target family executed (comparable with the paper)
    full: bool = False  # sm_90a: both GMMA and TMA executed
    tensor_core_flops: float | None = None  # by the architecture's share rule (evaluator/both_sides/arches.py)
    task_flops: float | None = None
    tensor_core_share: float | None = None  # tensor_core_flops / task_flops
    share_threshold: float | None = None
    ncu_gpu_time_ms: float | None = None  # Nsight Compute gpu__time_duration of the profiled call, all kernels
    cupti_median_ms: float | None = None
    timer_ratio: float | None = None  # ncu / cupti
    timer_disagreement: bool = False  # |ratio - 1| above the documented margin
    timer_margin: float | None = None
    # The profiled call against the trusted side's figure for the timed calls: the
    # ranked latency (never below the evaluator's own clock bound) and the rate it gives.
    ranked_latency_ms: float | None = None
    trusted_ratio: float | None = None  # ncu / ranked latency; held beyond integrity.NCU_MARGIN
    timed_tflops: float | None = None
    non_tensor_peak_tflops: float | None = None  # evaluator.checks.peaks: the GPU's fastest rate without tensor cores
    # True: the timed calls ran faster than any code without tensor cores can on this GPU, so they used them;
    # False: the timed rate is within reach of code without tensor cores, so only the profiled call shows the
    # target instructions (see docs/threat-model.md); None: no rate or no table entry.
    timed_beyond_non_tensor: bool | None = None
    # The GPU's own counters while the timing process serves the submission (evaluator/arch_check/tensor_witness.py):
    # the tensor work they witnessed as a share of the task's FLOPs for the calls made there; `witness_note` says why
    # there is none.
    witness_tensor_share: float | None = field(default=None, metadata={"added": "schema_version 2"})
    witness_any_tensor_pct: float | None = field(default=None, metadata={"added": "schema_version 2"})
    witness_seconds: float | None = field(default=None, metadata={"added": "schema_version 2"})
    witness_note: str = field(default="", metadata={"added": "schema_version 2"})
    # The timed workload the witness is of: the one whose calls do the most FLOPs, not always the profiled one
    witness_workload: str | None = field(default=None, metadata={"added": "schema_version 3"})
    # Tensor-core instructions of the arch's other families (Arch.other_tensor_families) in the static SASS, e.g.
    # {"mma": 8}: a second path that can do the task's work at tensor-core speed, so the target family's use in the
    # timed calls rests on the profiled call alone, whatever the timed rate.
    other_tensor_static: dict[str, int] = field(default_factory=dict, metadata={"added": "schema_version 3"})
    # A verified check whose timed calls' use of the target instructions rests on the profiled call alone: the timed
    # rate is within reach of code without tensor cores, or the module holds a second tensor-core path. The notes
    # say which; the boards mark the row.
    rests_on_profile: bool = field(default=False, metadata={"added": "schema_version 3"})
    profiled_kernels: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class Environment:
    hostname: str = ""
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    compute_capability: str | None = None
    driver_version: str | None = None
    cuda_runtime: str | None = None  # torch.version.cuda
    nvcc_version: str | None = None
    torch_version: str | None = None
    python_version: str = ""
    tvm_ffi_version: str | None = None
    ncu_version: str | None = None
    sm_clock_mhz_before: int | None = None
    sm_clock_mhz_after: int | None = None
    l2_bytes: int | None = None
    # An 8192³ bf16 torch.matmul measured once per evaluation process (cuBLAS's rate, docs/performance.md): a record
    # of the machine, not the denominator of fraction_of_peak (evaluator/checks/peaks.py is).
    peak_bf16_tflops: float | None = None
    timing_method: str | None = None


@dataclass
class SandboxInfo:
    """How candidate code (compiler included) was confined; see evaluator/isolation/jail.py and docs/verdict.md."""

    mode: str  # "bubblewrap", or "unsandboxed" (only when explicitly allowed; reason says why)
    reason: str = ""  # why unsandboxed; empty for bubblewrap
    bwrap_version: str | None = None
    network: bool = True  # whether candidate code could reach a network (False under bubblewrap)
    user: str = ""  # the identity inside, e.g. "root without capabilities"
    writable: list[str] = field(default_factory=list)  # the only places candidate code could write
    # limit name -> "value (how it was enforced)" or "not enforced: why", from what this evaluation's processes got
    limits: dict[str, str] = field(default_factory=dict)
    limit_events: dict[str, int] = field(default_factory=dict)  # e.g. pids_max_hit, oom_kill, summed over processes


@dataclass
class StageRecord:
    name: str
    state: StageState
    seconds: float = 0.0
    message: str = ""


@dataclass
class IntegrityHold:
    """A reason the evaluation is held for review instead of ranked (evaluator/checks/integrity.py)."""

    code: str  # timer_disagreement | host_time | profile_mismatch | l2_persistence
    message: str  # plain words, shown on the evaluation page, in the API and in the agent-loop feedback


@dataclass(frozen=True)
class KernelFootprint:
    """What a compiled function needs per launch: `cuobjdump --dump-resource-usage` (REG, SHARED) of the cubin."""

    registers: int
    shared_bytes: int  # static shared memory, with the 1 KB the driver reserves per block from sm_80 on


@dataclass
class FootprintCheck:
    """One of the submission's kernels as the timer saw it launch, against how it was compiled (class 2)."""

    name: str
    registers: int  # as launched (CUPTI activity record)
    static_shared_bytes: int  # as launched
    compiled: list[KernelFootprint] = field(default_factory=list)  # every cubin of the submission defining `name`
    matches: bool = True


@dataclass
class Integrity:
    """What the integrity checks saw: independent of the candidate process's own report (docs/threat-model.md)."""

    holds: list[IntegrityHold] = field(default_factory=list)  # any hold: never ranked
    timed_calls: int = 0  # timed candidate calls, all workloads
    checked_calls: int = 0  # outputs compared with the reference: timed calls chosen after they returned,
    # the re-check after each timing loop, one call of every back-to-back batch
    # The other calls of the back-to-back batches compared on sampled elements (evaluator/measure/batch_samples.py)
    sampled_calls: int = field(default=0, metadata={"added": "schema_version 3"})
    candidate_kernels: list[str] = field(default_factory=list)  # kernels compiled from the submission
    foreign_kernels: list[str] = field(default_factory=list)  # other kernels seen in candidate calls
    footprints: list[FootprintCheck] = field(default_factory=list)  # the submission's kernels as launched
    trusted_ms_per_call: dict[str, float] = field(default_factory=dict)  # workload uuid -> the parent's clock
    l2_persisting_bytes: int = 0  # the largest persisting-L2 limit the candidate set (reset before every call)
    notes: list[str] = field(default_factory=list)

    def hold(self, hold: IntegrityHold | None) -> None:
        if hold is not None and all((h.code, h.message) != (hold.code, hold.message) for h in self.holds):
            self.holds.append(hold)


@dataclass
class Verdict:
    evaluator_version: str
    task: str
    arch: str
    status: OverallStatus
    created_at: str  # ISO 8601, UTC
    source_sha256: str
    source_bytes: int
    stages_requested: list[str]
    stages: list[StageRecord] = field(default_factory=list)
    policy: list[PolicyFinding] = field(default_factory=list)
    compile: CompileResult | None = None
    sass: SassCounts | None = None
    workloads: list[WorkloadResult] = field(default_factory=list)
    arch_check: ArchCheck = field(default_factory=lambda: ArchCheck(ArchStatus.NOT_REQUESTED))
    environment: Environment | None = None
    notes: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0
    sandbox: SandboxInfo | None = None  # None only when nothing was compiled or run (policy rejection, policy only)
    workload_set: str = "public"  # "public" (workloads.jsonl) or "hidden" (hidden_workloads.jsonl)
    redacted: bool = False  # shapes, errors, timings and outputs removed for the submitter (see redact())
    integrity: Integrity | None = None  # None when no candidate call ran
    language: str = "cuda"  # the submission's kernel language: "cuda" (a .cu file) or "triton" (a .py file)
    triton_version: str | None = None  # the Triton that compiled it (language "triton" only)
    schema_version: int = SCHEMA_VERSION

    def stage(self, name: str) -> StageRecord | None:
        return next((s for s in self.stages if s.name == name), None)


def redact(verdict: Verdict) -> Verdict:
    """A copy for the submitter of a ranked (hidden) evaluation: pass/fail per workload and overall, nothing that
    reveals the hidden workloads (uuids, shapes, errors, timings, FLOP counts, output tails, messages)."""
    v = dataclasses.replace(verdict)
    v.workloads = [
        WorkloadResult(uuid=f"hidden-{k + 1}", axes={}, status=w.status) for k, w in enumerate(verdict.workloads)
    ]
    v.arch_check = ArchCheck(status=verdict.arch_check.status, full=verdict.arch_check.full)
    v.stages = [StageRecord(s.name, s.state) for s in verdict.stages]
    v.notes = []
    v.wall_seconds = 0.0
    if v.compile is not None:
        v.compile = dataclasses.replace(v.compile, command=[], output="", output_truncated=False)
    if verdict.integrity is not None:
        # Hold codes only: their messages quote timings of the hidden workloads.
        v.integrity = Integrity(holds=[IntegrityHold(h.code, "held for review") for h in verdict.integrity.holds])
    v.redacted = True
    return v


# --------------------------------------------------------------------------- JSON


def to_dict(verdict: Verdict) -> dict[str, Any]:
    """The verdict as plain data: what `dataclasses.asdict` gives, with each record field that holds an enum member
    written as its value. Walked here with each class's field names looked up once: `asdict` deep-copies every leaf
    and asks `fields()` at every node, which made writing the demo's five thousand verdicts most of its time."""
    plain: dict[str, Any] = _plain(verdict)
    return plain


_ATOMS = (str, int, float, bool, type(None))  # immutable: `asdict`'s deep copy gives the same object back


def _plain(value: Any) -> Any:
    if type(value) in _ATOMS:
        return value
    kind: Any = type(value)  # a class is hashable; mypy's view of `type(value)` is not
    names = _field_names(kind)
    if names is not None:
        out = {}
        for name in names:
            item = _plain(getattr(value, name))
            out[name] = item.value if isinstance(item, StrEnum) else item
        return out
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):  # a named tuple is rebuilt as its own type, as `asdict` does
        items = [_plain(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return copy.deepcopy(value)  # anything else (an enum member inside a list): as `asdict` treats it


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """A record class's field names in order; None for anything that is not a dataclass."""
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(f.name for f in dataclasses.fields(cls))


def to_json(verdict: Verdict, *, indent: int | None = 2) -> str:
    return json.dumps(to_dict(verdict), indent=indent, allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, StrEnum):
        return value.value
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def from_json(text: str) -> Verdict:
    return from_dict(json.loads(text))


def from_dict(data: dict[str, Any]) -> Verdict:
    verdict: Verdict = _build(Verdict, data)
    return verdict


def _build(cls: type, data: Any) -> Any:
    kwargs = {}
    for name, old_name, _hint, convert, _required, _nested in _field_plan(cls):
        # A renamed field is read under its old name too (documents written before the rename).
        if name in data:
            kwargs[name] = convert(data[name])
        elif old_name is not None and old_name in data:
            kwargs[name] = convert(data[old_name])
    return cls(**kwargs)


class _Field(typing.NamedTuple):
    name: str
    old_name: str | None  # the name documents written before a rename use
    hint: Any
    convert: Callable[[Any], Any]  # JSON value -> value of `hint`
    required: bool  # no default: `complete_fields` fills it in where a document lacks it
    nested: bool  # a value of `hint` can hold a record, so `complete_fields` looks inside it


@functools.cache
def _field_plan(cls: type) -> tuple[_Field, ...]:
    """What reading and completing need of each field of a record class, decided once per class rather than once
    per value (a verdict holds thousands of timing samples)."""
    hints = _hints(cls)
    return tuple(
        _Field(
            f.name,
            f.metadata.get("renamed_from") or None,
            hints[f.name],
            _converter(hints[f.name]),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            _holds_records(hints[f.name]),
        )
        for f in dataclasses.fields(cls)
    )


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A record class's field types, resolved once: `typing.get_type_hints` evaluates every annotation string on each
    call, which was most of the time of reading a verdict."""
    return typing.get_type_hints(cls)


def complete_fields(
    cls: type,
    data: Any,
    empty: Callable[[type, str, Any], Any],
    check: Callable[[type, Any], None] = lambda cls, data: None,
) -> Any:
    """`data`, a document of record `cls`, with every field that has no default present, nested records completed
    the same way: a field the document lacks becomes `empty(cls, name, its type)`. `check(cls, data)` sees each
    record's document first (to refuse what its caller cannot read); a document that is not a dict is returned as
    it is. A renamed field is completed where it is, under its old name (`from_dict` reads both). Each record and
    each list or dict that holds records is a new one; a value that holds none is the document's own (`data` is
    never modified)."""
    check(cls, data)
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for name, old_name, hint, _convert, required, nested in _field_plan(cls):
        key = name if name in out else old_name if old_name is not None and old_name in out else None
        if key is not None:
            if nested:
                out[key] = _complete_value(hint, out[key], empty, check)
        elif required:
            out[name] = empty(cls, name, hint)
    return out


def _complete_value(
    hint: Any, value: Any, empty: Callable[[type, str, Any], Any], check: Callable[[type, Any], None]
) -> Any:
    if value is None or not _holds_records(hint):
        return value  # nothing below to complete: a list of timing samples is not walked
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _complete_value(args[0], value, empty, check) if len(args) == 1 else value
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(hint)
        return [_complete_value(item, v, empty, check) for v in value]
    if origin is dict and isinstance(value, dict):
        _, item = typing.get_args(hint)
        return {k: _complete_value(item, v, empty, check) for k, v in value.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return complete_fields(hint, value, empty, check)
    return value


@functools.cache
def _holds_records(hint: Any) -> bool:
    """Whether a value of type `hint` can hold a record (a dataclass) at some depth."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, list, dict):
        return any(_holds_records(a) for a in typing.get_args(hint))
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _same(value: Any) -> Any:
    return value


@functools.cache
def _converter(hint: Any) -> Callable[[Any], Any]:
    """The function that turns a JSON value into a value of type `hint` (None stays None at every level), chosen by
    the type once; a value of another shape is passed on as it is, and the record's own checks see it."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _converter(args[0]) if len(args) == 1 else _same
    if origin is list:
        (item,) = typing.get_args(hint)
        each = _converter(item)
        if each is _same:
            return lambda value: None if value is None else list(value)
        return lambda value: None if value is None else [each(v) for v in value]
    if origin is dict:
        _, item = typing.get_args(hint)
        each = _converter(item)
        return lambda value: None if value is None else {k: each(v) for k, v in value.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda value: None if value is None else _build(hint, value)
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return lambda value: None if value is None else hint(value)
    if hint is float:
        return lambda value: float(value) if isinstance(value, int) else value
    return _same
