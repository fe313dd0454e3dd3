"""Which files of an evaluation the portal keeps, and under whose name: evidence is only what the trusted side wrote.

The evaluator's work folder mixes files the trusted parent wrote with files candidate code wrote or chose: the
build folder, the Triton cache (copied, still the candidate's bytes, into `build-trusted/`), the exchange and
profile folders. A folder walk cannot tell them apart, so nothing is published by walking. Kept are, by exact name:

- the source as submitted and the verdict, from memory (the portal wrote the one, the evaluator the other);
- the compiler's output as the verdict records it (`compile.log`; it quotes what the submission made it print);
- the SASS listing the SASS stage wrote from the verified binaries (`build-trusted/kernel.sass`), kept only when
  its instruction counts are exactly the verdict's, so a listing that is not the one the verdict counted never
  becomes the page's SASS;
- the Nsight Compute tables the parent printed from its own copy of the report (`logs/ncu-*.csv`), with every
  formula-like cell neutralised (portal/submissions/csv_cells.py);
- the submission's own output (its processes' stdout and stderr, Nsight Compute's log of the profiled run, which
  carries the candidate's prints), each cut to a cap and named `submission-...` with origin `submission`: shown
  as what the submission wrote, never as the evaluator's.

Everything is read under the hostile-file rule (evaluator/both_sides/hostile_files.py: no links, regular files, sizes capped
before reading). A file that is refused or does not fit the evaluation's byte cap is a `NotKept` with the reason,
which the evaluation records and its page shows; nothing here raises for a file's sake."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.binaries.sass import count_families
from evaluator.both_sides import hostile_files
from evaluator.both_sides.verdict import Verdict
from evaluator.isolation.limits import describe_bytes
from portal.submissions.csv_cells import UnreadableCsv, neutralise
from portal.submissions.models import Artifact

Origin = Artifact.Origin
SASS_MAX_BYTES = 64 * 1024 * 1024  # above any per-evaluation cap: the cap decides, this only bounds the read
NCU_CSV_MAX_BYTES = 64 * 1024 * 1024
LOG_OPEN_MAX_BYTES = 64 * 1024 * 1024  # a log is opened up to this size and cut to the log cap while read
MAX_SUBMISSION_LOGS = 16
# The names the evaluator gives its candidate processes' output (evaluator/measure/candidate.py) and the profiled run's log
# (evaluator/arch_check/arch_stage.py); the trusted-baseline process's output is not the submission's and not kept.
_SUBMISSION_LOG = re.compile(r"candidate-[0-9a-f]{8}\.(?:stdout|stderr)|ncu(?:-unsandboxed|-fallback)?\.log")
_LOGS_CAPS = hostile_files.TreeCaps(max_files=256, max_bytes=1 << 30, max_file_bytes=LOG_OPEN_MAX_BYTES, max_depth=2)


@dataclass(frozen=True)
class EvidenceFile:
    name: str  # the artifact's name
    data: bytes
    origin: str  # an Artifact.Origin value
    required: bool = False  # the source and the verdict: kept whatever the caps (both are in the database anyway)


@dataclass(frozen=True)
class NotKept:
    name: str
    size: int | None  # bytes, when known
    reason: str

    def as_dict(self) -> dict:
        return {"name": self.name, "bytes": self.size, "reason": self.reason}


@dataclass
class Evidence:
    files: list[EvidenceFile] = field(default_factory=list)
    not_kept: list[NotKept] = field(default_factory=list)


@dataclass(frozen=True)
class _Trusted:
    """One file the evaluator's trusted side writes in its work folder, by exact path."""

    folder: str
    name: str
    max_bytes: int


TRUSTED_SASS = _Trusted("build-trusted", "kernel.sass", SASS_MAX_BYTES)
TRUSTED_NCU_CSVS = (
    _Trusted("logs", "ncu-source.csv", NCU_CSV_MAX_BYTES),
    _Trusted("logs", "ncu-raw.csv", NCU_CSV_MAX_BYTES),
)


class _Budget:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.left = max_bytes

    def refusal(self, size: int) -> str | None:
        if size <= self.left:
            self.left -= size
            return None
        return evaluation_cap_reason(size, self.max_bytes)


def evaluation_cap_reason(size: int, cap: int) -> str:
    return (
        f"not kept: {describe_bytes(size)} would pass this evaluation's cap of {describe_bytes(cap)} on stored files "
        "(ARTIFACT_BYTES_PER_EVALUATION)"
    )


def collect(
    keep_dir: Path,
    *,
    source_name: str,
    source: str,
    verdict_bytes: bytes,
    record: Verdict | None,
    max_bytes: int,
    log_max_bytes: int,
) -> Evidence:
    """The evaluation's evidence files from the evaluator's work folder `keep_dir`, in the order they are kept
    when the byte cap `max_bytes` cannot hold them all."""
    out = Evidence()
    budget = _Budget(max_bytes)

    def keep(name: str, data: bytes, origin: str, *, required: bool = False) -> None:
        reason = budget.refusal(len(data))
        if reason is not None and not required:
            out.not_kept.append(NotKept(name, len(data), reason))
            return
        out.files.append(EvidenceFile(name, data, origin, required))

    keep(source_name, source.encode("utf-8"), Origin.SOURCE, required=True)
    keep("verdict.json", verdict_bytes, Origin.EVALUATOR, required=True)
    compile_output = record.compile.output if record is not None and record.compile else None
    if compile_output:
        keep("compile.log", compile_output.encode("utf-8"), Origin.TOOL)
    sass = _read_trusted(keep_dir, TRUSTED_SASS, budget, out)
    if sass is not None:
        mismatch = _sass_mismatch(sass, record)
        if mismatch:
            out.not_kept.append(NotKept(TRUSTED_SASS.name, len(sass), mismatch))
        else:
            keep(TRUSTED_SASS.name, sass, Origin.EVALUATOR)
    for table in TRUSTED_NCU_CSVS:
        data = _read_trusted(keep_dir, table, budget, out)
        if data is None:
            continue
        try:
            keep(table.name, neutralise(data), Origin.EVALUATOR)
        except UnreadableCsv as exc:
            out.not_kept.append(NotKept(table.name, len(data), f"not kept: {exc}"))
    for name, data in _submission_logs(keep_dir, budget, log_max_bytes, out):
        keep(f"submission-{name}.txt", data, Origin.SUBMISSION)
    return out


def _read_trusted(keep_dir: Path, item: _Trusted, budget: _Budget, out: Evidence) -> bytes | None:
    """The file's bytes, or None when it is absent (nothing to say), refused or too large (said in `out`). The size
    is checked against the cap before anything is read."""
    root = keep_dir / item.folder
    try:
        size = hostile_files.file_size(root, item.name, max_bytes=item.max_bytes)
    except hostile_files.Refused as exc:
        if _absent(root, item.name):
            return None
        out.not_kept.append(NotKept(item.name, None, f"not kept: {_plain(exc, keep_dir)}"))
        return None
    if size > budget.left:
        out.not_kept.append(NotKept(item.name, size, budget.refusal(size) or ""))
        return None
    try:
        return hostile_files.read_bytes(root, item.name, max_bytes=min(item.max_bytes, budget.left))
    except hostile_files.Refused as exc:
        out.not_kept.append(NotKept(item.name, size, f"not kept: {_plain(exc, keep_dir)}"))
        return None


def _plain(exc: Exception, keep_dir: Path) -> str:
    """A refusal as the page may show it: the worker's own folder names (a temporary path) left out."""
    return str(exc).replace(os.fspath(keep_dir), "the evaluator's work folder")


def _absent(root: Path, name: str) -> bool:
    try:
        os.lstat(root / name)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _sass_mismatch(text: bytes, record: Verdict | None) -> str:
    """Why the listing is not the one the SASS stage counted ("" when it is): the verdict's counts are the check."""
    counted = record.sass if record is not None else None
    if counted is None:
        return "not kept: the verdict has no SASS counts to check this listing against"
    try:
        listed = count_families(text.decode("utf-8", errors="replace"), counted.arch, tuple(counted.target_families))
    except (KeyError, ValueError) as exc:
        return f"not kept: its counts cannot be checked ({exc})"
    same = (listed.opcodes, listed.instructions, listed.kernels) == (
        counted.opcodes,
        counted.instructions,
        counted.kernels,
    )
    return "" if same else "not kept: its instructions are not the ones the verdict's SASS counts were made from"


def _submission_logs(keep_dir: Path, budget: _Budget, cap: int, out: Evidence) -> list[tuple[str, bytes]]:
    """The submission's own output files, each cut to `cap` bytes (a note at the cut says how much there was)."""
    root = keep_dir / "logs"
    try:
        names = [n for n in hostile_files.list_files(root, caps=_LOGS_CAPS) if _SUBMISSION_LOG.fullmatch(n)]
    except hostile_files.Refused as exc:
        if not _absent(keep_dir, "logs"):
            out.not_kept.append(NotKept("logs", None, f"the submission's output was not kept: {_plain(exc, keep_dir)}"))
        return []
    found = []
    for number, name in enumerate(names):
        if number >= MAX_SUBMISSION_LOGS:
            out.not_kept.append(NotKept(name, None, f"not kept: only {MAX_SUBMISSION_LOGS} output files are kept"))
            continue
        try:
            with hostile_files.open_regular(root, name, max_bytes=LOG_OPEN_MAX_BYTES) as (fd, size):
                data = _head(fd, cap)
        except hostile_files.Refused as exc:
            out.not_kept.append(NotKept(name, None, f"not kept: {_plain(exc, keep_dir)}"))
            continue
        if not data:
            continue
        if size > len(data):
            data += f"\n[portal] cut here: the first {len(data)} of {size} bytes are kept\n".encode()
        found.append((name, data))
    return found


def _head(fd: int, cap: int) -> bytes:
    chunks, total = [], 0
    while total < cap and (block := os.read(fd, min(1 << 20, cap - total))):
        chunks.append(block)
        total += len(block)
    return b"".join(chunks)
