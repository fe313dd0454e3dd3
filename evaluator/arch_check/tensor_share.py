"""How many FLOPs the tensor cores did in one profiled call, by the rule its architecture names (evaluator/both_sides/arches.py).

The share of the task's FLOPs they did is what tells a kernel that does its work on the tensor cores from one that
runs a token MMA beside SIMT code (evaluator/arch_check/ncu.py, `decide_arch`). Two rules:
- `MnemonicShareRule` (sm_90a): each executed MMA instruction's tile is in its mnemonic (HGMMA.64x256x16), and
  the source page gives how often it was issued;
- `CounterShareRule` (sm_100a): tcgen05's UTCHMMA keeps its tile in a descriptor, so Nsight Compute's own
  math-operation counters are summed instead.

Pure: the caller parses the report and keeps only the submission's kernels; a rule that cannot give a figure says
why, and then no kernel is `verified` on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from evaluator.binaries.sass import mma_flops_per_issue
from evaluator.both_sides.arches import CounterShareRule, MnemonicShareRule, TensorShareRule, family_of


@dataclass(frozen=True)
class TensorFlops:
    """The tensor cores' FLOPs in the profiled call, or why the rule could not measure them."""

    flops: float | None
    why_not: str = ""  # set when flops is None


def metrics_needed(rule: TensorShareRule | None) -> tuple[str, ...]:
    """The Nsight Compute metrics the profile must collect for the rule (beyond the source page)."""
    return rule.metrics if isinstance(rule, CounterShareRule) else ()


def from_mnemonics(
    rule: MnemonicShareRule, rows: Iterable[tuple[str, int]], operands: str | None = None
) -> TensorFlops:
    """FLOPs from (opcode, predicated-on thread executions) rows: issues times the tile in the mnemonic; with
    `operands`, only the opcodes of that operand type count."""
    bases = rule.operand_opcodes[operands] if operands else None
    total = 0.0
    for opcode, predicated_on in rows:
        if predicated_on == 0 or family_of(opcode) not in rule.families:
            continue
        if bases is not None and opcode.split(".", 1)[0] not in bases:
            continue
        per_issue = mma_flops_per_issue(opcode)
        if per_issue is None:
            return TensorFlops(None, f"the tile of {opcode} is not in its mnemonic")
        total += predicated_on / rule.threads_per_issue * per_issue
    return TensorFlops(total)


def from_counters(
    rule: CounterShareRule, launches: list[Mapping[str, float]], operands: str | None = None
) -> TensorFlops:
    """FLOPs as the rule's counters summed over the submission's profiled launches (each a metric -> value map);
    with `operands`, only the counters of that operand type.

    No launch, or a launch without one of the counters, is no figure: a zero there would read as a token kernel,
    an absent counter as work not done."""
    if not launches:
        return TensorFlops(None, "the profile's counters name none of the submission's kernels")
    total = 0.0
    for launch in launches:
        missing = [m for m in rule.metrics if m not in launch]
        if missing:
            return TensorFlops(None, f"the profile lacks the counters {', '.join(missing)}")
        total += sum(launch[m] for m in (rule.operand_metrics[operands] if operands else rule.metrics))
    return TensorFlops(total)


def operand_words(rule: TensorShareRule | None, operands: str | None) -> str:
    """What the share counted when the task names its operands, for a verdict's reason ("" when it names none)."""
    if not operands or rule is None:
        return ""
    if isinstance(rule, MnemonicShareRule):
        return f"{operands} operands only ({'/'.join(rule.operand_opcodes[operands])})"
    return f"{operands} operands only ({len(rule.operand_metrics[operands])} counters)"
