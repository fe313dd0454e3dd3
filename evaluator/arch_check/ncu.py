"""Nsight Compute: did the target instructions really run, and how much of the work did they do?

Pure parts (tested on captured CSVs in tests/fixtures/ncu/): `parse_source_page` reads the source page
(`--page source --print-source sass --csv`), `parse_raw_metrics` and `parse_counters` read the raw page,
`family_execution` sums per family, `tensor_core_flops` applies the architecture's share rule
(evaluator/arch_check/tensor_share.py), and `decide_arch` turns all of it into the verdict's ArchCheck.
`ncu_profile_command` and `read_report` are the thin wrappers around the `ncu` binary; both collect what the
architecture's share rule reads.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.arch_check import tensor_share
from evaluator.binaries.binary_tools import read_binary
from evaluator.binaries.sass import instruction_family
from evaluator.both_sides.arches import FAMILIES, CounterShareRule, MnemonicShareRule, get_arch
from evaluator.both_sides.launches import Dims, Launch, dims3
from evaluator.both_sides.verdict import ArchCheck, ArchStatus, FamilyExecution, SassCounts
from evaluator.checks.integrity import matches_submission

if TYPE_CHECKING:
    from evaluator.isolation.jail import Jail

# Below this share of the task's FLOPs done by executed tensor-core instructions, "executed" is only a token.
TOKEN_SHARE_THRESHOLD = 0.5
# The ncu time of the profiled call and the CUPTI median may differ by this much before the verdict flags it
# (one profiled call against a median of 50; see docs/performance.md for the measured agreement).
TIMER_MARGIN = 0.2
NVTX_RANGE = "ptxbench_candidate"

_EXECUTED = "Instructions Executed"
_THREADS = "Thread Instructions Executed"
_PRED_ON = "Predicated-On Thread Instructions Executed"


class NcuParseError(ValueError):
    """The report text is empty, truncated or not an Nsight Compute source page."""


@dataclass(frozen=True)
class SourceRow:
    address: str
    source: str  # the SASS text, e.g. "HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0"
    executed: int  # warp-level instructions executed
    thread_executed: int
    predicated_on: int  # thread-level instructions executed with the predicate true

    @property
    def opcode(self) -> str:
        text = re.sub(r"^@!?U?P[T0-9]+\s+", "", self.source.strip())
        return text.split(None, 1)[0] if text else ""


@dataclass
class SourceKernel:
    name: str
    rows: list[SourceRow] = field(default_factory=list)


def _number(text: str, where: str) -> int:
    t = text.strip().replace(",", "")
    if t in ("", "-", "n/a"):
        return 0
    try:
        return int(float(t))
    except ValueError:
        raise NcuParseError(f"{where}: not a number: {text!r}") from None


def _csv_rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def parse_source_page(csv_text: str) -> list[SourceKernel]:
    """Kernels and their per-SASS-instruction counters from ncu's source page in CSV form.

    The page is one block per profiled kernel launch: a `"Kernel Name","<name>"` line, a header line starting
    with "Address","Source", then one row per instruction. Lines before the first block (ncu's `==PROF==`
    messages, the profiled program's prints) are skipped. Raises NcuParseError for an empty, truncated or
    foreign report, so that the caller can say `profile_error` instead of passing silently.
    """
    if not csv_text.strip():
        raise NcuParseError("the report is empty")
    rows = _csv_rows(csv_text)
    kernels: list[SourceKernel] = []
    header: list[str] | None = None
    cols: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if not row or all(not c.strip() for c in row):
            continue
        if row[0] == "Kernel Name":
            kernels.append(SourceKernel(name=row[1] if len(row) > 1 else ""))
            header = None
            continue
        if row[0] == "Address" and len(row) > 1 and row[1] == "Source":
            header = row
            missing = [c for c in (_EXECUTED, _THREADS, _PRED_ON) if c not in row]
            if missing:
                raise NcuParseError(f"line {number}: source page lacks columns {missing}")
            cols = {c: row.index(c) for c in (_EXECUTED, _THREADS, _PRED_ON)}
            if not kernels:
                kernels.append(SourceKernel(name=""))
            continue
        if header is None:
            if not kernels:
                continue  # preamble before the first kernel block: the profiled program's own output
            raise NcuParseError(f"line {number}: instruction row before any 'Address','Source' header")
        if len(row) < len(header) - 1 or len(row) <= max(cols.values()):
            raise NcuParseError(f"line {number}: truncated row ({len(row)} of {len(header)} fields)")
        where = f"line {number}"
        kernels[-1].rows.append(
            SourceRow(
                address=row[0],
                source=row[1].strip(),
                executed=_number(row[cols[_EXECUTED]], where),
                thread_executed=_number(row[cols[_THREADS]], where),
                predicated_on=_number(row[cols[_PRED_ON]], where),
            )
        )
    if not kernels or header is None:
        raise NcuParseError("no source page found in the report (no 'Address','Source' header)")
    if not any(k.rows for k in kernels):
        raise NcuParseError("the source page lists no instructions")
    return kernels


_TIME_UNITS_MS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3}


def parse_raw_metrics(csv_text: str, metric: str = "gpu__time_duration.sum") -> list[tuple[str, float]]:
    """(kernel name, value) per profiled kernel from `ncu --page raw --csv --metrics METRIC`.

    Time metrics are converted to milliseconds using the units row ncu prints under the header.
    """
    rows = [r for r in _csv_rows(csv_text) if r]
    start = next((i for i, r in enumerate(rows) if "Kernel Name" in r and metric in r), None)
    if start is None:
        raise NcuParseError(f"no raw page with column {metric!r}")
    header = rows[start]
    name_col, value_col = header.index("Kernel Name"), header.index(metric)
    scale = 1.0
    result = []
    for row in rows[start + 1 :]:
        if len(row) <= value_col:
            raise NcuParseError("truncated raw page row")
        if not row[0].strip():  # the units row: empty ID
            scale = _TIME_UNITS_MS.get(row[value_col].strip(), 1.0)
            continue
        value = row[value_col].strip().replace(",", "")
        try:
            result.append((row[name_col], float(value) * scale))
        except ValueError:
            raise NcuParseError(f"raw page value {row[value_col]!r} is not a number") from None
    return result


def parse_counters(csv_text: str, metrics: tuple[str, ...]) -> list[tuple[str, dict[str, float]]]:
    """(kernel name, {metric: value}) per profiled launch from `ncu --page raw --csv --metrics ...`.

    A metric without a column, or whose cell is not a count ("n/a" where the chip lacks the counter), is left out
    of that launch's map: the caller decides what a missing counter means, never a silent zero."""
    rows = [r for r in _csv_rows(csv_text) if r]
    start = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if start is None:
        raise NcuParseError("no raw page with kernel names")
    header = rows[start]
    name_col = header.index("Kernel Name")
    columns = {m: header.index(m) for m in metrics if m in header}
    result = []
    for row in rows[start + 1 :]:
        if len(row) < len(header):
            raise NcuParseError("truncated raw page row")
        if not row[0].strip():  # the units row: empty ID
            continue
        values: dict[str, float] = {}
        for metric, col in columns.items():
            try:
                value = float(row[col].strip().replace(",", ""))
            except ValueError:
                continue
            if math.isfinite(value) and value >= 0:  # a count: "nan", "inf" or a negative one is no reading
                values[metric] = value
        result.append((row[name_col], values))
    return result


def parse_launches(csv_text: str) -> list[Launch]:
    """(kernel name, grid, block) of every profiled kernel, from the raw page's "Grid Size"/"Block Size"."""
    rows = [r for r in _csv_rows(csv_text) if r]
    start = next((i for i, r in enumerate(rows) if {"Kernel Name", "Grid Size", "Block Size"} <= set(r)), None)
    if start is None:
        raise NcuParseError("no raw page with kernel names, grid and block sizes")
    header = rows[start]
    name, grid, block = (header.index(c) for c in ("Kernel Name", "Grid Size", "Block Size"))
    launches = []
    for row in rows[start + 1 :]:
        if len(row) <= max(name, grid, block):
            raise NcuParseError("truncated raw page row")
        if not row[0].strip():  # the units row
            continue
        launches.append(Launch(row[name], _dims(row[grid]), _dims(row[block])))
    return launches


def _dims(text: str) -> Dims:
    numbers = re.findall(r"\d+", text.replace(",", " , "))
    if len(numbers) != 3:
        raise NcuParseError(f"launch dimensions {text!r} are not (x, y, z)")
    return dims3(numbers)


def printed_raw_page(output: str) -> str | None:
    """The raw page Nsight Compute printed on its own output during the profiled run (the profile command asks for
    it), or None when it printed none. That output is a pipe only the profiler holds: the profiled process gave it
    up before candidate code ran, so, unlike the report file, nothing the candidate can write reaches it, as long as
    the sandbox runs as another user than this process (arch_stage.profiler_output_private)."""
    try:
        parse_launches(output)
    except NcuParseError:
        return None
    return output


def one_block_per_launch(kernels: list[SourceKernel], launches: list[Launch]) -> list[SourceKernel]:
    """The source page's blocks, as many of each kernel as the raw page has launches of it, when the extra ones only
    repeat others.

    Nsight Compute prints a kernel's block more than once when several kernels of one module ran in the profiled
    call: on an H100 (Nsight Compute 2025.3.1) a call of two kernels of one library gave each kernel's block twice,
    equal in every row (tests/fixtures/ncu/README.md), while kernels of two modules gave one block each. Of a kernel
    with more blocks than launches, the distinct blocks are kept, then repeats of them up to the number of launches
    (launches of one kernel with equal counts print equal blocks). A repeat never adds to the counts that way. Blocks
    that repetition cannot explain (more distinct ones than launches, or fewer blocks than launches) are left as
    they are, for `report_not_of_run` to refuse."""
    by_name: dict[str, list[SourceKernel]] = {}
    for kernel in kernels:
        by_name.setdefault(kernel.name, []).append(kernel)
    kept: dict[str, list[SourceKernel]] = {}
    for name, blocks in by_name.items():
        wanted = sum(1 for launch in launches if _same_kernel(name, launch.name))
        distinct = [b for i, b in enumerate(blocks) if all(b.rows != e.rows for e in blocks[:i])]
        if len(blocks) <= wanted or len(distinct) > wanted:
            kept[name] = blocks
            continue
        repeats = [b for b in blocks if not any(b is d for d in distinct)]
        kept[name] = distinct + repeats[: wanted - len(distinct)]
    # In the page's order, so that what is kept reads as the page did.
    keep_ids = {id(b) for blocks in kept.values() for b in blocks}
    return [k for k in kernels if id(k) in keep_ids]


def report_not_of_run(kernels: list[SourceKernel], printed: str) -> str | None:
    """Why the report's source page cannot be of the run whose raw page the profiler printed, or None.

    Both list every profiled launch once, by name: a report whose launches differ was written or changed by
    someone else after the profiler (a kernel added, say a tensor-core one, or a foreign one left out). A name
    printed mangled on one page and demangled on the other is the same kernel (`matches_submission`), so that a
    difference in how the two print names cannot refuse an honest report."""
    unmatched = [launch.name for launch in parse_launches(printed)]
    extra = []
    for name in (k.name for k in kernels):
        same = next((i for i, p in enumerate(unmatched) if _same_kernel(name, p)), None)
        if same is None:
            extra.append(name)
        else:
            del unmatched[same]
    if not extra and not unmatched:
        return None
    parts = []
    if extra:
        parts.append("in the report only: " + ", ".join(sorted(extra))[:300])
    if unmatched:
        parts.append("printed by the profiler only: " + ", ".join(sorted(unmatched))[:300])
    return "its kernel launches differ from those the profiler printed (" + "; ".join(parts) + ")"


def _same_kernel(a: str, b: str) -> bool:
    return a == b or matches_submission(a, [b]) or matches_submission(b, [a])


def family_execution(kernels: list[SourceKernel]) -> dict[str, tuple[int, int]]:
    """Per family: (warp-level executed, predicated-on thread executions), summed over all kernels and rows."""
    sums = {f: [0, 0] for f in FAMILIES}
    for k in kernels:
        for row in k.rows:
            fam = instruction_family(row.opcode)
            if fam is not None:
                sums[fam][0] += row.executed
                sums[fam][1] += row.predicated_on
    return {f: (v[0], v[1]) for f, v in sums.items()}


def tensor_core_flops(
    arch: str, kernels: list[SourceKernel], raw_page: str | None = None, operands: str | None = None
) -> tensor_share.TensorFlops:
    """The architecture's share rule applied to the submission's profiled kernels (the source page's blocks) and,
    for a counter rule, to the raw page's rows of those same kernels (by name; another library's are not summed);
    `operands`: the task family's operand type, whose MMA work alone counts."""
    rule = get_arch(arch).tensor_share
    if isinstance(rule, MnemonicShareRule):
        rows = ((r.opcode, r.predicated_on) for k in kernels for r in k.rows)
        return tensor_share.from_mnemonics(rule, rows, operands)
    if isinstance(rule, CounterShareRule):
        if raw_page is None:
            return tensor_share.TensorFlops(None, "no raw page with the tensor counters was read")
        try:
            counters = parse_counters(raw_page, rule.metrics)
        except NcuParseError as exc:
            return tensor_share.TensorFlops(None, f"unreadable raw page: {exc}")
        own = {k.name for k in kernels}
        return tensor_share.from_counters(rule, [values for name, values in counters if name in own], operands)
    return tensor_share.TensorFlops(None, f"{arch} has no tensor-core share rule")


def decide_arch(
    *,
    arch: str,
    sass: SassCounts,
    kernels: list[SourceKernel] | None,
    task_flops: float | None,
    error: str | None = None,
    threshold: float = TOKEN_SHARE_THRESHOLD,
    raw_page: str | None = None,
    operands: str | None = None,
) -> ArchCheck:
    """The architecture-verification status from static counts and (if profiled) the executed counts.

    - absent: no target family in the static SASS (decided without profiling);
    - profile_error: `error` is set (ncu missing, no counter permission, empty or truncated report), or a target
      family executed but the architecture's share rule could not measure the tensor cores' FLOPs (`raw_page`:
      the raw page, which a counter rule reads);
    - not_executed: present statically, zero predicated-on executions of every target family;
    - verified: a target family executed (PTXBench's rule; `full` when GMMA and TMA both did on sm_90a) and the
      tensor cores did at least `threshold` of the task's FLOPs;
    - token: executed, but the share is below `threshold`.

    `operands` (the task family's `tensor_operands`): only MMA work on that operand type is counted in the share.
    """
    targets = sass.target_families
    target_arch = get_arch(arch)
    check = ArchCheck(status=ArchStatus.ABSENT, share_threshold=threshold, task_flops=task_flops)
    check.other_tensor_static = {
        f: sass.families[f] for f in target_arch.other_tensor_families if sass.families.get(f, 0) > 0
    }
    if sass.target_count == 0:
        check.reason = f"no {'/'.join(targets)} instruction in the static SASS"
        check.families = {f: FamilyExecution(static=0, executed=0, predicated_on=0) for f in targets}
        return check
    if error is not None or kernels is None:
        check.status = ArchStatus.PROFILE_ERROR
        check.reason = error or "no profile was taken"
        check.families = {
            f: FamilyExecution(static=sass.families.get(f, 0), executed=0, predicated_on=0) for f in targets
        }
        return check
    executed = family_execution(kernels)
    check.profiled_kernels = [k.name for k in kernels]
    check.families = {
        f: FamilyExecution(static=sass.families.get(f, 0), executed=executed[f][0], predicated_on=executed[f][1])
        for f in targets
    }
    ran = [f for f in targets if executed[f][1] > 0]
    check.ptxbench_verified = bool(ran)
    check.full = target_arch.is_full(ran)
    measured = tensor_core_flops(arch, kernels, raw_page, operands)
    check.tensor_core_flops = measured.flops
    if measured.flops is not None and task_flops:
        check.tensor_core_share = measured.flops / task_flops
    if not ran:
        check.status = ArchStatus.NOT_EXECUTED
        check.reason = f"{'/'.join(targets)} present in SASS but never executed with a true predicate"
        return check
    if check.tensor_core_share is None:
        # Executed target instructions alone do not show the work was done on them: no share, no `verified`.
        why = measured.why_not or "the task states no FLOP count"
        check.status = ArchStatus.PROFILE_ERROR
        check.reason = f"{'/'.join(ran)} executed, but the tensor cores' share of the task's FLOPs is unknown: {why}"
        return check
    if check.tensor_core_share < threshold:
        check.status = ArchStatus.TOKEN
        counted = tensor_share.operand_words(target_arch.tensor_share, operands)
        check.reason = (
            f"{'/'.join(ran)} executed, but tensor-core instructions did {check.tensor_core_share:.1%} of the "
            f"task's FLOPs (threshold {threshold:.0%}{'; counting ' + counted if counted else ''})"
        )
        return check
    check.status = ArchStatus.VERIFIED
    full = " and ".join(f.upper() for f in sorted(target_arch.full_families))
    check.reason = f"{'/'.join(ran)} executed" + (f" (full: {full})" if check.full else "")
    return check


def compare_timers(
    check: ArchCheck,
    cupti_median_ms: float | None,
    margin: float = TIMER_MARGIN,
    *,
    ranked_latency_ms: float | None = None,
) -> None:
    """Record the CUPTI median beside ncu's time and flag a disagreement beyond `margin`; and ncu's time against
    the ranked latency, which the trusted clock bounds (`trusted_ratio`, held by integrity.ncu_hold)."""
    check.cupti_median_ms = cupti_median_ms
    check.timer_margin = margin
    if cupti_median_ms and check.ncu_gpu_time_ms:
        check.timer_ratio = check.ncu_gpu_time_ms / cupti_median_ms
        check.timer_disagreement = abs(check.timer_ratio - 1.0) > margin
    check.ranked_latency_ms = ranked_latency_ms
    if ranked_latency_ms and check.ncu_gpu_time_ms:
        check.trusted_ratio = check.ncu_gpu_time_ms / ranked_latency_ms


def tensor_evidence(check: ArchCheck, timed_tflops: float | None, non_tensor_peak: float | None) -> None:
    """Whether the timed calls' own rate shows tensor cores at work, whatever the profiled call showed.

    The profiler is visible from inside the candidate process (its injection library is mapped there), so a
    kernel can run its target instructions only when profiled. The timed rate comes from the ranked latency,
    which the trusted clock bounds: above the GPU's fastest rate without tensor cores, the timed calls used them."""
    check.timed_tflops = timed_tflops
    check.non_tensor_peak_tflops = non_tensor_peak
    if timed_tflops is None or non_tensor_peak is None:
        check.timed_beyond_non_tensor = None
        return
    check.timed_beyond_non_tensor = timed_tflops > non_tensor_peak


def tensor_evidence_note(check: ArchCheck) -> str | None:
    """The verdict's note for a verified check whose timed rate does not show tensor cores by itself."""
    if check.status != ArchStatus.VERIFIED or check.timed_beyond_non_tensor is not False:
        return None
    return (
        f"arch: the target instructions were seen in the profiled call; the timed calls ran at "
        f"{check.timed_tflops:.4g} TFLOP/s, within the {check.non_tensor_peak_tflops:.4g} TFLOP/s that code "
        "without tensor cores reaches on this GPU, so their use in the timed calls rests on the profiled call alone"
    )


def other_tensor_note(check: ArchCheck) -> str | None:
    """The verdict's note for a verified check whose module also holds a second tensor-core path.

    The launches of the profiled call must match the timed ones, so a kernel that takes another path when timed
    branches inside one kernel, and both paths are in its static SASS. Above the GPU's non-tensor rate, the timed
    calls used tensor cores, but not necessarily the target's: warp-level mma.sync reaches those rates too, and the
    GPU's counters (tensor_witness) count both alike."""
    if check.status != ArchStatus.VERIFIED or not check.other_tensor_static:
        return None
    found = ", ".join(f"{n} {'/'.join(FAMILIES[f].opcodes)}" for f, n in check.other_tensor_static.items())
    return (
        f"arch: the module also holds other tensor-core instructions ({found}), a second path to the task's work "
        "at tensor-core speed; that the timed calls used the target instructions rests on the profiled call alone"
    )


def disclose(check: ArchCheck) -> list[str]:
    """The notes of a verified check whose timed calls' use of the target instructions rests on the profiled call
    alone (empty for every other check); sets `ArchCheck.rests_on_profile` to whether there is any."""
    notes = [note for note in (tensor_evidence_note(check), other_tensor_note(check)) if note is not None]
    check.rests_on_profile = bool(notes)
    return notes


# --------------------------------------------------------------------------- running ncu (thin)


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"), reverse=True) + [
        Path("/usr/local/cuda/bin/ncu")
    ]:
        if candidate.is_file():
            return str(candidate)
    return None


def ncu_profile_command(
    ncu: str, report: Path, target: list[str], kernel_names: list[str] | None = None, *, arch: str | None = None
) -> list[str]:
    """Profile only the candidate's kernels; clocks left alone; with `arch`, the counters its share rule reads.

    By default the filter is the NVTX range the candidate process opens around its one call; with
    `kernel_names` (mangled names from the SASS) a kernel-name filter is used instead, the fallback for hosts
    where NVTX filtering finds nothing.
    """
    if kernel_names:
        pattern = "regex:^(" + "|".join(re.escape(k) for k in kernel_names) + ")$"
        filters = ["--kernel-name-base", "mangled", "--kernel-name", pattern]
    else:
        filters = ["--nvtx", "--nvtx-include", f"{NVTX_RANGE}/"]
    return [
        ncu,
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--section",
        "SourceCounters",
        "--metrics",
        _metrics(arch),
        # The raw page on the profiler's own output too: a pipe the profiled process cannot reach, unlike the
        # report file (`printed_raw_page`).
        "--page",
        "raw",
        "--csv",
        *_MANGLED,
        *filters,
        "--export",
        str(report),
        "--force-overwrite",
        *target,
    ]


def _metrics(arch: str | None) -> str:
    """The raw-page metrics: the kernel time, and the counters of the architecture's share rule (only its own: ncu
    refuses a metric the chip lacks)."""
    rule = get_arch(arch).tensor_share if arch else None
    return ",".join(("gpu__time_duration.sum", *tensor_share.metrics_needed(rule)))


# Kernel names as the SASS and CUPTI give them, so they can be compared with the submission's (evaluator/checks/integrity.py).
_MANGLED = ("--print-kernel-base", "mangled")


def read_report(
    ncu: str,
    report: Path,
    timeout_s: float = 120.0,
    *,
    arch: str | None = None,
    raw: bool = True,
    jail: Jail | None = None,
) -> tuple[str, str]:
    """(source page CSV, raw page CSV with gpu__time_duration and, with `arch`, its share rule's counters) of an
    exported report; with `raw` False the raw page is not imported ("" in its place).

    The two imports run side by side: each is a second of ncu starting up and reading the same report. With
    `jail`, each runs in that jail's sandbox, the one the profile ran in (evaluator/binaries/binary_tools.py): the
    report is a file the profiled process could write, and Nsight Compute's reader is a large parser. A failed
    import then raises ToolFailed with the reason.
    """
    pages = [["--page", "source", "--print-source", "sass", "--csv", *_MANGLED]]
    if raw:
        pages.append(["--page", "raw", "--csv", "--metrics", _metrics(arch), *_MANGLED])
    if jail is not None:

        def imported(page: list[str]) -> str:  # read_binary puts the report last, after --import
            return read_binary(
                ncu,
                [*page, "--import"],
                report,
                jail=jail,
                timeout_s=timeout_s,
                toolchain=False,
                what="the profile report",
            )

        with ThreadPoolExecutor(len(pages)) as pool:
            printed = list(pool.map(imported, pages))
        return printed[0], printed[1] if raw else ""
    commands = [[ncu, "--import", str(report), *page] for page in pages]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # noqa: S603
        for cmd in commands
    ]
    outputs = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=timeout_s)
            outputs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outputs[0], outputs[1] if raw else ""


def ncu_error_reason(output: str) -> str | None:
    """A short reason from ncu's own messages, when it failed for a known cause."""
    if "ERR_NVGPUCTRPERM" in output:
        return "no permission to read GPU performance counters (ERR_NVGPUCTRPERM)"
    if "No kernels were profiled" in output:
        return "no kernel was profiled (nothing ran inside the candidate's NVTX range)"
    errors = [ln.strip() for ln in output.splitlines() if ln.startswith("==ERROR==")]
    if errors:
        return "; ".join(errors)[:500]
    return None


@functools.lru_cache(maxsize=8)
def ncu_version(ncu: str) -> str | None:
    """`ncu --version` (once per process and path: starting ncu costs about a second)."""
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+(\S+)", out)
    return m.group(1) if m else (out.strip().splitlines()[-1] if out.strip() else None)
