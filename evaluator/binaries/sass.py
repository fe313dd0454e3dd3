"""Static SASS: parse `cuobjdump --dump-sass` text and count the target instruction families.

`parse_sass` and `count_families` are pure functions tested on committed golden files
(tests/fixtures/sass/); `disassemble` is the thin wrapper that runs cuobjdump, sandboxed
(evaluator/binaries/binary_tools.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.binaries.binary_tools import read_binary
from evaluator.both_sides.arches import FAMILIES, family_of, get_arch
from evaluator.both_sides.verdict import KernelFootprint, SassCounts

if TYPE_CHECKING:
    from evaluator.isolation.jail import Jail

# "        /*01b0*/                   UTMALDG.2D [UR8], [UR4] ;   /* 0x... */"
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_GUARD = re.compile(r"^@!?U?P[T0-9]+\s+")
_MMA_SHAPE = re.compile(r"^([A-Z]+MMA)\.(\d+)x(\d+)x(\d+)")


@dataclass(frozen=True)
class SassInstruction:
    kernel: str
    address: int
    text: str  # without the predicate guard, e.g. "HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0"
    opcode: str  # full mnemonic with modifiers, e.g. "HGMMA.64x8x16.F32.BF16"
    predicated: bool  # had an @P guard

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]


def parse_sass(text: str) -> list[SassInstruction]:
    """Every instruction in a cuobjdump SASS dump, tagged with its function name."""
    kernel = ""
    result: list[SassInstruction] = []
    for line in text.splitlines():
        if m := _FUNCTION.match(line):
            kernel = m.group(1)
            continue
        m = _INSTRUCTION.match(line)
        if m is None:
            continue
        body = m.group(2).strip()
        guard = _GUARD.match(body)
        if guard:
            body = body[guard.end() :]
        opcode = body.split(None, 1)[0] if body else ""
        if not opcode:
            continue
        result.append(SassInstruction(kernel, int(m.group(1), 16), body, opcode, guard is not None))
    return result


def instruction_family(opcode: str) -> str | None:
    """The target family an opcode belongs to (by the registry's FAMILIES, evaluator/both_sides/arches.py), or None."""
    return family_of(opcode)


def mma_flops_per_issue(opcode: str) -> float | None:
    """FLOPs of one issue of an MMA instruction whose mnemonic carries its shape (Hopper's GMMA: per warpgroup).

    HGMMA.64x256x16 multiplies a 64x16 tile by a 16x256 tile: 2*64*256*16 FLOPs. The mnemonic's K is used as
    printed; the benchmark's tasks are dense, so sparse variants are not expected. Returns None for opcodes
    without a shape (tcgen05's UTCHMMA keeps its shape in a descriptor register, not in the mnemonic).
    """
    m = _MMA_SHAPE.match(opcode)
    if not m:
        return None
    mm, nn, kk = (int(g) for g in m.groups()[1:])
    return 2.0 * mm * nn * kk


def count_families(sass_text: str, arch: str, target_families: tuple[str, ...] | None = None) -> SassCounts:
    """Count the target families in a SASS dump. `target_families` defaults to the arch's families."""
    spec = get_arch(arch)
    targets = tuple(target_families) if target_families else spec.families
    instructions = parse_sass(sass_text)
    families = {f: 0 for f in FAMILIES}
    opcodes: dict[str, int] = {}
    kernels: list[str] = []
    for ins in instructions:
        if ins.kernel and ins.kernel not in kernels:
            kernels.append(ins.kernel)
        fam = instruction_family(ins.opcode)
        if fam is None:
            continue
        families[fam] += 1
        opcodes[ins.opcode] = opcodes.get(ins.opcode, 0) + 1
    return SassCounts(
        arch=arch,
        families=families,
        opcodes=dict(sorted(opcodes.items())),
        target_families=list(targets),
        target_count=sum(families[f] for f in targets),
        kernels=kernels,
        instructions=len(instructions),
    )


_RES_FUNCTION = re.compile(r"^\s*Function (\S+?):\s*$")
_RES_FIELDS = re.compile(r"\b(REG|SHARED|LOCAL|STACK):(\d+)")


def parse_resource_usage(text: str) -> dict[str, list[KernelFootprint]]:
    """Per function, what `cuobjdump --dump-resource-usage` says it was compiled with (one entry per cubin that
    defines it). SHARED there includes the 1 KB the driver reserves per block from sm_80 on."""
    out: dict[str, list[KernelFootprint]] = {}
    name: str | None = None
    for line in text.splitlines():
        m = _RES_FUNCTION.match(line)
        if m:
            name = m.group(1)
            continue
        if name is None:
            continue
        fields = dict(_RES_FIELDS.findall(line))
        if "REG" in fields and "SHARED" in fields:
            footprint = KernelFootprint(int(fields["REG"]), int(fields["SHARED"]))
            if footprint not in out.setdefault(name, []):
                out[name].append(footprint)
        name = None
    return out


def resource_usage(
    binaries: list[Path], cuobjdump: str | None = None, *, jail: Jail | None = None
) -> dict[str, list[KernelFootprint]]:
    """`parse_resource_usage` over every cubin or shared library of the candidate."""
    return merge_resource_usage([dump_resource_usage(b, cuobjdump, jail=jail) for b in binaries])


def merge_resource_usage(texts: list[str]) -> dict[str, list[KernelFootprint]]:
    """`parse_resource_usage` of each binary's `cuobjdump --dump-resource-usage`, merged (each footprint once)."""
    merged: dict[str, list[KernelFootprint]] = {}
    for text in texts:
        for name, prints in parse_resource_usage(text).items():
            merged.setdefault(name, []).extend(p for p in prints if p not in merged.get(name, []))
    return merged


def dump_resource_usage(binary: Path, cuobjdump: str | None = None, *, jail: Jail | None = None) -> str:
    """`cuobjdump --dump-resource-usage` of a cubin or a shared library (sandboxed with `jail`)."""
    return _cuobjdump(binary, "--dump-resource-usage", cuobjdump, jail)


def disassemble(binary: Path, cuobjdump: str | None = None, *, jail: Jail | None = None) -> str:
    """`cuobjdump --dump-sass` of a cubin or a shared library (sandboxed with `jail`)."""
    return _cuobjdump(binary, "--dump-sass", cuobjdump, jail)


def _cuobjdump(binary: Path, what: str, cuobjdump: str | None, jail: Jail | None) -> str:
    # The binary came out of a build candidate code could steer: the tool reads it in the compile sandbox, and
    # its failure is binary_tools.ToolFailed (the submission's verdict), never an evaluator error.
    from evaluator.build.compile import find_cuobjdump

    return read_binary(cuobjdump or find_cuobjdump(), [what], binary, jail=jail)
