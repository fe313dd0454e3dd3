"""The GPU architectures PTXBench targets, and the SASS instruction families that count for each.

This is the one place that knows which opcodes make up a family and which families an
architecture's verification asks for; the SASS parser, the task loader and the portal all ask here.

Used on both sides of the trust boundary, as a dependency only: the candidate process loads it through
evaluator/taskdata.py; every decision made from it is the parent's.
"""

from __future__ import annotations

from dataclasses import dataclass

# Opcode prefixes per family, matched against the SASS mnemonic's base (before the first '.').
FAMILY_OPCODES: dict[str, tuple[str, ...]] = {
    # Hopper warpgroup MMA (wgmma.mma_async): fp16/bf16, fp8, int8, binary.
    "gmma": ("HGMMA", "QGMMA", "IGMMA", "BGMMA"),
    # Tensor Memory Accelerator bulk tensor transfers (cp.async.bulk.tensor / cp.reduce.async.bulk.tensor).
    "tma": ("UTMALDG", "UTMASTG", "UTMAREDG"),
    # Blackwell fifth-generation tensor core path: UTC* (tcgen05.mma/alloc/commit/cp ...), LDTM/STTM (tcgen05.ld/st).
    "tcgen05": ("UTC", "LDTM", "STTM"),
}

# Families whose opcodes are matched by prefix rather than exactly (UTCHMMA, UTCBAR, UTCATOMSWS ...).
PREFIX_FAMILIES = frozenset({"tcgen05"})


@dataclass(frozen=True)
class Arch:
    """One compilation target."""

    name: str  # e.g. "sm_90a": the value users pass as --arch and the key used everywhere
    label: str  # human name for pages
    gencode: str  # nvcc -gencode argument
    queue: str  # RQ queue whose workers own GPUs of this architecture
    compute_capability: tuple[int, int]  # what torch.cuda.get_device_capability() reports
    families: tuple[str, ...]  # target families the arch check looks for
    gpus: tuple[str, ...]  # GPU models of this architecture, for filters
    # Families that must all execute for the check to say `full` (sm_90a: GMMA and TMA); empty: never full.
    full_families: frozenset[str] = frozenset()

    def is_full(self, executed: set[str] | frozenset[str] | list[str]) -> bool:
        """Whether the executed families make this architecture's full rule (all of `full_families`)."""
        return bool(self.full_families) and self.full_families <= set(executed)


ARCHES: dict[str, Arch] = {
    "sm_90a": Arch(
        name="sm_90a",
        label="Hopper (sm_90a)",
        gencode="arch=compute_90a,code=sm_90a",
        queue="gpu-sm90",
        compute_capability=(9, 0),
        families=("gmma", "tma"),
        gpus=("H100", "H200", "H20", "GH200"),
        full_families=frozenset({"gmma", "tma"}),
    ),
    "sm_100a": Arch(
        name="sm_100a",
        label="Blackwell (sm_100a)",
        gencode="arch=compute_100a,code=sm_100a",
        queue="gpu-sm100",
        compute_capability=(10, 0),
        families=("tcgen05",),
        gpus=("B200", "GB200"),
    ),
}


def get_arch(name: str) -> Arch:
    """Return the architecture called `name`, or raise ValueError listing the known ones."""
    try:
        return ARCHES[name]
    except KeyError:
        known = ", ".join(sorted(ARCHES))
        raise ValueError(f"unknown architecture {name!r} (known: {known})") from None


def arch_for_capability(major: int, minor: int) -> Arch | None:
    """The architecture whose GPUs report this compute capability, if PTXBench targets it."""
    for arch in ARCHES.values():
        if arch.compute_capability == (major, minor):
            return arch
    return None
