"""The architecture registry: every GPU architecture PTXBench targets, and all that each layer needs to know of it.

One entry per architecture (`ARCHES`) holds its target name, queue and GPU models with their datasheet peaks,
the SASS instruction families that count as target use (`FAMILIES`, which also holds the tensor-core families no
architecture targets, listed per entry as `other_tensor_families`), the rule that measures how much of the
task's work its tensor cores did (`MnemonicShareRule`, `CounterShareRule`), the note and knowledge pack the task
suite gives it. Every layer reads it here and keeps no list of its own: the SASS parser and the Nsight Compute
decision (evaluator/binaries/sass.py, ncu.py), the peaks (peaks.py), the task suite generator (scripts/make_suite.py), the
portal, and through the portal's registry endpoint (docs/api.md) the command-line client. Adding an architecture
is adding an entry here and its knowledge pack folder (docs/architecture.md, "The architecture registry").

Used on both sides of the trust boundary, as a dependency only: the candidate process loads it through
evaluator/both_sides/taskdata.py; every decision made from it is the parent's. Data only: it imports nothing of the evaluator.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    """SASS instructions that, executed, count as use of an architecture's own features."""

    name: str  # e.g. "gmma": the key task files and verdicts use
    opcodes: tuple[str, ...]  # mnemonic bases (before the first '.'), e.g. "HGMMA"
    by_prefix: bool = False  # match a base that starts with an opcode (UTC matches UTCHMMA, UTCBAR, ...)

    def matches(self, base: str) -> bool:
        return any(base.startswith(p) for p in self.opcodes) if self.by_prefix else base in self.opcodes


FAMILIES: dict[str, Family] = {
    # Hopper warpgroup MMA (wgmma.mma_async): fp16/bf16, fp8, int8, binary.
    "gmma": Family("gmma", ("HGMMA", "QGMMA", "IGMMA", "BGMMA")),
    # Tensor Memory Accelerator bulk tensor transfers (cp.async.bulk.tensor / cp.reduce.async.bulk.tensor).
    "tma": Family("tma", ("UTMALDG", "UTMASTG", "UTMAREDG")),
    # Blackwell fifth-generation tensor core path: UTC* (tcgen05.mma/alloc/commit/cp ...), LDTM/STTM (tcgen05.ld/st).
    "tcgen05": Family("tcgen05", ("UTC", "LDTM", "STTM"), by_prefix=True),
    # Warp-level mma.sync (Volta on, Blackwell too): the target of no architecture here, counted because it can do a
    # task's work at tensor-core speed beside the target path. HFMA2.MMA (a register move the compiler issues to the
    # MMA pipe) is not one of them: its base is HFMA2. FP8 mma.sync is HMMA on sm_90a and sm_100a, QMMA where the
    # GPU has an FP8 warp-level MMA of its own (sm_89; tests/fixtures/sass/).
    "mma": Family("mma", ("HMMA", "IMMA", "DMMA", "BMMA", "QMMA")),
}


class _OpcodesView(Mapping[str, tuple[str, ...]]):
    """Family name -> opcodes, read live from FAMILIES (for callers that need only the names or the opcodes)."""

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return FAMILIES[name].opcodes

    def __iter__(self) -> Iterator[str]:
        return iter(FAMILIES)

    def __len__(self) -> int:
        return len(FAMILIES)


FAMILY_OPCODES: Mapping[str, tuple[str, ...]] = _OpcodesView()


@dataclass(frozen=True)
class MnemonicShareRule:
    """Tensor-core FLOPs read from the profiled source page alone: each executed instruction of `families` carries
    its tile in its mnemonic (HGMMA.64x256x16: 2*64*256*16 FLOPs per issue), and one issue shows as
    `threads_per_issue` predicated-on thread executions (a warpgroup: 128)."""

    families: tuple[str, ...]
    threads_per_issue: int
    # Operand type -> the opcode bases of those operands (fp8 -> QGMMA): a task family that names its operands
    # (task_families.TaskFamily.tensor_operands) has only those counted, so an FP8 task done in bf16 wgmma is not
    # its target's work.
    operand_opcodes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterShareRule:
    """Tensor-core FLOPs as the sum of Nsight Compute counters over the submission's profiled kernels, for MMA
    instructions whose tile is not in the mnemonic. Each counter counts math operations, a multiply-add as two, so
    the sum is FLOPs (checked on an H200: sm__ops_path_tensor_src_bf16_dst_fp32 reads 2*1024**3 for one 1024^3
    bf16 product, tests/fixtures/ncu/README.md)."""

    metrics: tuple[str, ...]  # full names with their roll-up, e.g. "...utchmma_src_bf16_dst_fp32_sparsity_off.sum"
    # Operand type -> the metrics (a subset of `metrics`) of those operands, as MnemonicShareRule.operand_opcodes.
    operand_metrics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


TensorShareRule = MnemonicShareRule | CounterShareRule


@dataclass(frozen=True)
class GpuModel:
    """One GPU model and form factor, with the datasheet figures no honest kernel can beat on it."""

    words: tuple[str, ...]  # words that must all appear in the device name ("H100", "PCIE"); whole words only
    dense_tensor_tflops: Mapping[str, float]  # dense tensor-core peak per input dtype, TFLOP/s (TOPS for int8)
    hbm_tbps: float  # HBM bandwidth, TB/s
    non_tensor_tflops: float | None = None  # fastest rate without tensor cores; None where the datasheet is silent


@dataclass(frozen=True)
class Arch:
    """One compilation target."""

    name: str  # e.g. "sm_90a": the value users pass as --arch and the key used everywhere
    label: str  # human name for pages
    gencode: str  # nvcc -gencode argument
    queue: str  # RQ queue whose workers own GPUs of this architecture
    compute_capability: tuple[int, int]  # what torch.cuda.get_device_capability() reports
    families: tuple[str, ...]  # target families the arch check looks for (keys of FAMILIES)
    gpus: tuple[str, ...]  # GPU models of this architecture, for filters
    # Families that must all execute for the check to say `full` (sm_90a: GMMA and TMA); empty: never full.
    full_families: frozenset[str] = frozenset()
    # How the tensor cores' share of the task's FLOPs is measured; None: it cannot be, and no kernel is `verified`.
    tensor_share: TensorShareRule | None = None
    gpu_models: tuple[GpuModel, ...] = ()  # datasheet figures, for "of peak" and the physical limits
    # Tensor-core families that are not the target but run here (keys of FAMILIES): a kernel holding one can do the
    # task's work on them when timed and on the target only when profiled, so a verified check says so.
    other_tensor_families: tuple[str, ...] = ()
    target_note: str = ""  # what counts as target use, in words, for the task files
    knowledge_pack: str | None = None  # id of its pack under tasks/packs/

    def is_full(self, executed: set[str] | frozenset[str] | list[str]) -> bool:
        """Whether the executed families make this architecture's full rule (all of `full_families`)."""
        return bool(self.full_families) and self.full_families <= set(executed)


# Datasheet figures. Dense (without sparsity) tensor-core peaks by input dtype, from NVIDIA's H100 (SXM5, PCIe, NVL),
# H200 (SXM, NVL) and HGX B200 (per GPU) datasheets, which print the sparse figure: the dense one is half of it.
# float16 runs at the bfloat16 rate, float32 on tensor cores as TF32, float64 on the FP64 tensor cores, int8 and
# float8_e5m2 at the float8_e4m3fn rate. The rate without tensor cores is packed FP16/BF16 FMA (twice FP32), from
# the H100 whitepaper (SXM5: 133.8; PCIe: 102.4; NVL: 120) and the H200 datasheets (the H100's SMs and clocks).


def _tensor(f64: float, f32: float, f16: float, f8: float, **more: float) -> dict[str, float]:
    return {
        "float64": f64,
        "float32": f32,
        "bfloat16": f16,
        "float16": f16,
        "float8_e4m3fn": f8,
        "float8_e5m2": f8,
        "int8": f8,
        **more,
    }


_HOPPER_SXM = _tensor(67.0, 494.7, 989.4, 1978.9)
_HOPPER_PCIE = _tensor(51.0, 378.0, 756.0, 1513.0)
_HOPPER_NVL = _tensor(60.0, 417.5, 835.0, 1670.5)

# Every UTC*MMA math-operation counter Nsight Compute 2025.3 lists for the GB100 chip (B200, GB200), one per
# source/destination type, each in its two sparsity halves (`ncu --query-metrics --chip gb100`, excerpt in
# tests/fixtures/ncu/gb100-query-metrics-utcmma.txt): the plain counter is their sum, but a B200 report of
# `--set full` holds the halves only (its roofline section's counters; tests/fixtures/ncu/b200-*), so the rule reads
# what Nsight Compute's own sections collect on that chip. Legacy mma.sync (HMMA) is left out: it is not tcgen05 work.
_TCGEN05_MMA_OPS = tuple(
    f"sm__ops_path_tensor_op_{op}_sparsity_{half}.sum"
    for op in (
        "utchmma_src_bf16_dst_fp32",
        "utchmma_src_fp16_dst_fp16",
        "utchmma_src_fp16_dst_fp32",
        "utchmma_src_tf32_dst_fp32",
        "utcimma_src_int8",
        "utcomma_src_fp4_dst_fp32",
        "utcqmma_src_fp4_fp6_fp8_dst_fp16",
        "utcqmma_src_fp4_fp6_fp8_dst_fp32",
    )
    for half in ("off", "on")
)

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
        # A wgmma issue is one warpgroup's: four warp-level executions, 128 predicated-on threads.
        tensor_share=MnemonicShareRule(
            families=("gmma",),
            threads_per_issue=128,
            operand_opcodes={"fp8": ("QGMMA",)},
        ),
        other_tensor_families=("mma",),
        gpu_models=(
            GpuModel(("H100", "PCIE"), _HOPPER_PCIE, hbm_tbps=2.0, non_tensor_tflops=102.4),
            GpuModel(("H100", "NVL"), _HOPPER_NVL, hbm_tbps=3.9, non_tensor_tflops=120.0),
            GpuModel(("H200", "NVL"), _HOPPER_NVL, hbm_tbps=4.8, non_tensor_tflops=120.0),
            GpuModel(("H100",), _HOPPER_SXM, hbm_tbps=3.35, non_tensor_tflops=133.8),  # H100 SXM5
            GpuModel(("H200",), _HOPPER_SXM, hbm_tbps=4.8, non_tensor_tflops=133.8),  # H200 SXM
        ),
        target_note=(
            "wgmma (HGMMA in SASS, QGMMA with FP8 operands) and/or TMA bulk tensor copies (UTMALDG/UTMASTG/UTMAREDG)"
        ),
        knowledge_pack="hopper",
    ),
    "sm_100a": Arch(
        name="sm_100a",
        label="Blackwell (sm_100a)",
        gencode="arch=compute_100a,code=sm_100a",
        queue="gpu-sm100",
        compute_capability=(10, 0),
        families=("tcgen05",),
        gpus=("B200", "GB200"),
        # UTCHMMA and its kin keep their tile in an instruction descriptor, not in the mnemonic: counters instead.
        tensor_share=CounterShareRule(
            metrics=_TCGEN05_MMA_OPS,
            operand_metrics={"fp8": tuple(m for m in _TCGEN05_MMA_OPS if "_fp8_" in m)},
        ),
        other_tensor_families=("mma",),
        gpu_models=(
            # HGX B200, per GPU; its datasheet states no rate without tensor cores.
            GpuModel(("B200",), _tensor(40.0, 1100.0, 2250.0, 4500.0, float4_e2m1=9000.0), hbm_tbps=8.0),
        ),
        target_note="tcgen05.mma / tcgen05.ld / tcgen05.st (UTC*, LDTM, STTM in SASS)",
        knowledge_pack="blackwell",
    ),
}


# The architecture a page or form opens on when the request names none.
DEFAULT_ARCH = "sm_90a"
assert DEFAULT_ARCH in ARCHES


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


def family_of(opcode: str) -> str | None:
    """The family a SASS opcode belongs to (its base, before the first '.', matched), or None."""
    base = opcode.split(".", 1)[0]
    return next((f.name for f in FAMILIES.values() if f.matches(base)), None)


def gpu_models() -> list[GpuModel]:
    """Every architecture's GPU models, the one naming the most words first: "H100 PCIe" is tried before "H100"."""
    models = [m for arch in ARCHES.values() for m in arch.gpu_models]
    return sorted(models, key=lambda m: -len(m.words))
