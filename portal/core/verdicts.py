"""The one vocabulary of verdicts, shared by every page, the JSON API, CSV and the datasets: the architecture
check's states, the status words of a row, and the phrase and badge tone of a verdict. Pure functions of the
recorded fields (an Evaluation, a board row or a dict carry the same names); the ranking rules that use these words
live in `portal/leaderboard/boards/ranking.py`."""

from __future__ import annotations

from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.verdict import ArchStatus, OverallStatus

# The architecture check's states, in board order: the evaluator's own words (evaluator/both_sides/verdict.py ArchStatus,
# docs/verdict.md) are the one vocabulary of every page, the API and CSV; "" (no arch check recorded) reads as
# not_requested. Only `verified` ranks; the others are grouped behind ?show=all in this order.
ARCH_STATES = tuple(
    s.value
    for s in (
        ArchStatus.VERIFIED,
        ArchStatus.TOKEN,
        ArchStatus.NOT_EXECUTED,
        ArchStatus.ABSENT,
        ArchStatus.NOT_REQUESTED,
        ArchStatus.PROFILE_ERROR,
    )
)

# The status of a row people see, in one set of words on every page (badges, section heads, notes), the API and
# the exports: measured on a GPU and ranked; held, always with its reason; static-only (compiled, never measured:
# never on a public board or chart, shown to its owner); synthetic (made up by the demo seed, marked on each row).
ROW_STATUS = {
    "ranked": "measured on a GPU and ranked",
    "held": "held for review: measured, but not ranked until the reason beside it is resolved",
    "static-only": "scored without a GPU: compiled and checked on the CPU stages only, never run, so correctness "
    "and speed are unknown; not on public boards or charts (its owner sees it)",
    "synthetic": "made up by the demo seed (seed_leaderboard), never measured",
}

# What each state means, for legends and tooltips.
ARCH_STATE_MEANING = {
    "verified": "the target instructions executed and did the work",
    "token": "the target instructions executed but did little of the work",
    "not_executed": "the target instructions are in the binary but never executed",
    "absent": "no target instruction in the binary",
    "not_requested": "the instruction check was not run",
    "profile_error": "the instruction check could not profile the kernel",
}

# How the target families read in sentences ("correct, but wgmma/TMA never executed").
_FAMILY_WORDS = {"gmma": "wgmma", "tma": "TMA", "tcgen05": "tcgen05"}

# Keyed by the evaluator's overall statuses (a stored status word looks them up: StrEnum members equal their words).
_FAILURE_PHRASES = {
    OverallStatus.INCORRECT_NUMERICAL: "incorrect: wrong values",
    OverallStatus.INCORRECT_SHAPE: "incorrect: wrong output shape",
    OverallStatus.INCORRECT_DTYPE: "incorrect: wrong output dtype",
    OverallStatus.RUNTIME_ERROR: "incorrect: runtime error",
    OverallStatus.TIMEOUT: "incorrect: timed out",
    OverallStatus.COMPILE_ERROR: "incorrect: did not compile",
    OverallStatus.POLICY_REJECTED: "rejected by the source policy",
    OverallStatus.FOREIGN_KERNEL: "rejected: a kernel not compiled from the submission did the work",
    OverallStatus.STATIC_ONLY: "scored without a GPU: compiled, never run",  # ROW_STATUS["static-only"]
}


def arch_state(arch_status: str | None) -> str:
    """The one-vocabulary word for a recorded arch status (unknown or empty: not_requested)."""
    return arch_status if arch_status in ARCH_STATES else "not_requested"


def arch_badge(arch_status: str | None, arch_full: bool) -> str:
    """The architecture state as the board's badge: the state word, `· full` when both Hopper paths ran."""
    state = arch_state(arch_status)
    return "verified · full" if state == ArchStatus.VERIFIED and arch_full else state


def _families(arch: str) -> str:
    spec = ARCHES.get(arch)
    names = spec.families if spec else ()
    return "/".join(_FAMILY_WORDS.get(n, n) for n in names) or "the target instructions"


def verdict_phrase(status: str | None, arch_status: str | None, arch_full: bool = False, arch: str = "") -> str:
    """The one combined phrase for a verdict, used by every page (template filter) and the API
    (`verdict_phrase`): correctness first, then what the instruction check found."""
    status = status or ""
    if not status:
        return "no verdict yet"
    if status != OverallStatus.PASSED:
        return _FAILURE_PHRASES.get(status, f"incorrect: {status.lower()}")
    state = arch_state(arch_status)
    families = _families(arch)
    return {
        "verified": "correct · verified · full" if arch_full else "correct · verified",
        "token": f"correct, but {families} did little of the work",
        "not_executed": f"correct, but {families} never executed",
        "absent": f"correct, but no {families} in the binary",
        "not_requested": "correct · instructions not checked",
        "profile_error": "correct · instructions not checked (profiler error)",
    }[state]


def verdict_tone(status: str | None, arch_status: str | None) -> str:
    """The badge colour class of a verdict phrase: ok only for correct and verified; none (neutral) for a verdict
    scored without a GPU, which says nothing against the kernel."""
    if status == OverallStatus.STATIC_ONLY:
        return ""
    if status != OverallStatus.PASSED:
        return "bad" if status else ""
    return "ok" if arch_state(arch_status) == ArchStatus.VERIFIED else "warn"
