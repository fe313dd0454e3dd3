"""The task-families registry: the one place each kind of task (BF16 GEMM, attention forward and backward, FP8 GEMM)
says how its inputs are drawn, what a call costs in FLOPs and bytes, how its output is compared (tolerances), which
library baseline and reference it uses, and which templates and knowledge-pack pages serve it.

A task names its family through its definition's `op_type`. scripts/make_suite.py writes the task folders from
these entries (ptxbench.json's group, flops, tolerance and baselines; the reference, baseline and starter files
from scripts/suite_templates/); evaluator/both_sides/inputs.py draws each input by its family's rule; the comparison reads
the tolerances make_suite wrote from here. A task of no registered family (an imported FlashInfer-Trace data set)
keeps the defaults: every float input standard normal, the task file's own tolerances.

Plain data with no imports beyond the standard library: used on both sides of the trust boundary, loaded in
candidate processes only as a dependency of evaluator/both_sides/inputs.py (the draws must be the same in both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DISTRIBUTIONS = frozenset({"normal", "uniform"})


@dataclass(frozen=True)
class Draw:
    """How one random floating-point input is drawn from the call's generator: "normal" (standard normal in fp32)
    or "uniform" over [low, high) in fp32, then cast to the input's dtype. Integer and bool inputs keep their fixed
    ranges (evaluator/both_sides/inputs.py)."""

    distribution: str = "normal"
    low: float = 0.0
    high: float = 1.0

    def __post_init__(self) -> None:
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"unknown distribution {self.distribution!r} (known: {sorted(DISTRIBUTIONS)})")
        if self.distribution == "uniform" and not self.low < self.high:
            raise ValueError("a uniform draw needs low < high")


NORMAL = Draw()


@dataclass(frozen=True)
class Tolerance:
    """The comparison rule's bounds (evaluator/measure/compare.py): an element fails only beyond both atol and rtol, and
    ||out-ref||/||ref|| must stay under `relative_norm` (None: the evaluator's default bound)."""

    atol: float
    rtol: float
    relative_norm: float | None = None

    def as_json(self) -> dict[str, float]:
        """The `tolerance` object of ptxbench.json (the key `relative_norm` only when it is set)."""
        out = {"atol": self.atol, "rtol": self.rtol}
        if self.relative_norm is not None:
            out["relative_norm"] = self.relative_norm
        return out


@dataclass(frozen=True)
class TrustedFile:
    """A trusted Python file of the task folder written from a template: a library baseline or input generator."""

    id: str
    name: str  # what pages show
    file: str  # its name in the task folder
    template: str  # its template under scripts/suite_templates/
    function: str = "run"

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "file": self.file, "function": self.function}


@dataclass(frozen=True)
class TaskFamily:
    name: str
    op_type: str  # the definition's op_type: how a task names its family
    group: str  # ptxbench.json's group (a board section)
    flops: str  # FLOP expression over the axes (evaluator/both_sides/flops.py)
    # The bytes a call moves at least (inputs read once, outputs written once), over the axes: the same figure
    # evaluator/physical_limits.io_bytes computes from the definition's shapes and dtypes (a test checks).
    io_bytes: str
    tolerance: Tolerance
    reference: str  # template of the definition's reference
    baselines: tuple[TrustedFile, ...]  # the first one is the speedup reference
    starter_prefix: str  # starters are the templates "<prefix>_<language's starter file>"
    knowledge_pages: tuple[str, ...]  # pages under tasks/packs/ written for this family
    draws: Mapping[str, Draw] = field(default_factory=dict)  # input name -> its draw; absent: NORMAL
    input_generator: TrustedFile | None = None
    # Causal attention does half the work (the same bytes) and, backward, needs a wider tolerance.
    causal_flops: str | None = None
    causal_tolerance: Tolerance | None = None
    # The tensor cores' operand type the task's target means (a key of each architecture's share rule's operand
    # map): only that type's MMA work counts toward the share. None: any tensor-core MMA of the target counts.
    tensor_operands: str | None = None

    def draw(self, input_name: str) -> Draw:
        return self.draws.get(input_name, NORMAL)

    def flops_for(self, causal: bool) -> str:
        return self.causal_flops if causal and self.causal_flops else self.flops

    def tolerance_for(self, causal: bool) -> Tolerance:
        return self.causal_tolerance if causal and self.causal_tolerance else self.tolerance


# The bf16 tasks' rule: the bf16 rounding of the output under 1e-2, the library baselines well inside it
# (docs/baselines.md).
_BF16_ELEMENT_RULE = Tolerance(atol=0.01, rtol=0.01)
# Attention's outputs are about as small as atol (O is a weighted mean of ~N(0,1) rows over S keys), so the element
# rule alone cannot tell a narrower arithmetic from bf16's: a forward with P and V in e4m3 (a CPU emulation, S=4096)
# passes it at a relative norm of about 0.038. The library baselines score 2.0e-3 to 2.6e-3, forward and backward,
# and the expert kernels 2.1e-3 to 2.5e-3 on every workload (docs/baselines.md, the committed reference verdicts):
# 1e-2 is four times them and a third of the e4m3 arithmetic.
_ATTENTION_NORM = 1e-2
_ATTENTION_RULE = Tolerance(atol=0.01, rtol=0.01, relative_norm=_ATTENTION_NORM)

GEMM_BF16 = TaskFamily(
    name="gemm_bf16",
    op_type="gemm",
    group="gemm",
    flops="2*M*N*K",
    io_bytes="2*M*K + 2*N*K + 2*M*N",
    tolerance=_BF16_ELEMENT_RULE,
    reference="gemm_reference.py",
    baselines=(TrustedFile("cublas", "cuBLAS (torch.matmul)", "baseline.py", "gemm_baseline.py"),),
    starter_prefix="gemm",
    knowledge_pages=("hopper/gemm.md", "blackwell/gemm-example.md"),
)

_ATTN_FWD_BYTES = "2*4*B*H*S*D + 4*B*H*S"  # Q, K, V in, O out (bf16); LSE out (fp32)
MHA_FWD = TaskFamily(
    name="mha_fwd",
    op_type="mha_with_lse",
    group="mha_fwd",
    flops="4*B*H*S*S*D",
    causal_flops="2*B*H*S*S*D",
    io_bytes=_ATTN_FWD_BYTES,
    tolerance=_ATTENTION_RULE,
    reference="mha_fwd_reference.py",
    baselines=(
        TrustedFile(
            "cudnn",
            "cuDNN attention (torch aten._scaled_dot_product_cudnn_attention)",
            "baseline_cudnn.py",
            "mha_fwd_cudnn.py",
        ),
        TrustedFile(
            "flash",
            "FlashAttention-2 (torch aten._scaled_dot_product_flash_attention)",
            "baseline_flash.py",
            "mha_fwd_flash.py",
        ),
    ),
    starter_prefix="mha_fwd",
    knowledge_pages=("hopper/attention.md", "blackwell/attention.md"),
)

MHA_BWD = TaskFamily(
    name="mha_bwd",
    op_type="mha_bwd",
    group="mha_bwd",
    # FlashAttention's convention: backward = 2.5 x forward (5 matrix products against the forward's 2).
    flops="10*B*H*S*S*D",
    causal_flops="5*B*H*S*S*D",
    io_bytes="2*8*B*H*S*D + 4*B*H*S",  # Q, K, V, O, dO in and dQ, dK, dV out (bf16); LSE in (fp32)
    tolerance=_ATTENTION_RULE,
    # Causal attention backward: the first query rows attend few keys, so P and dS are O(1) there and the bf16
    # rounding of dS that every tensor-core kernel does (cuDNN and FlashAttention-2 alike) reaches up to 1.37x the
    # 1e-2 tolerance under the element rule (measured on an H200, docs/baselines.md). 3e-2 puts the library
    # baselines at about a third of the tolerance, as the other tasks have it.
    causal_tolerance=Tolerance(atol=0.03, rtol=0.03, relative_norm=_ATTENTION_NORM),
    reference="mha_bwd_reference.py",
    baselines=(
        TrustedFile(
            "cudnn",
            "cuDNN attention backward (torch aten._scaled_dot_product_cudnn_attention_backward)",
            "baseline_cudnn.py",
            "mha_bwd_cudnn.py",
        ),
        TrustedFile(
            "flash",
            "FlashAttention-2 backward (torch aten._scaled_dot_product_flash_attention_backward)",
            "baseline_flash.py",
            "mha_bwd_flash.py",
        ),
    ),
    input_generator=TrustedFile(
        "forward", "fp32 forward pass for O and LSE", "inputs.py", "mha_bwd_inputs.py", function="derive"
    ),
    starter_prefix="mha_bwd",
    knowledge_pages=("hopper/attention.md", "blackwell/attention.md"),
)

# Per-tensor scales drawn so that their product sa*sb lies in [1/64, 1/4): never near 1, so a kernel that drops
# either scale (or both) is off by a factor of 2 or more on every element; not powers of two, so applying them
# is a real multiplication.
_FP8_SCALE = Draw("uniform", 0.125, 0.5)
GEMM_FP8 = TaskFamily(
    name="gemm_fp8",
    op_type="gemm_fp8",
    group="gemm_fp8",
    flops="2*M*N*K",
    io_bytes="M*K + N*K + 4 + 4 + 2*M*N",  # e4m3 A and B, two fp32 scales in; bf16 C out
    # The e4m3 inputs are exact in the fp32 reference (so is a TF32 product of them), so the only error is the
    # kernel's accumulation and the bf16 rounding of C. Hopper's FP8 wgmma accumulates in about 14 bits (DeepSeek-V3
    # technical report, arXiv:2412.19437, section 3.3.2: "limited to retaining around 14 bits", a maximum relative
    # error near 2% at K=4096; Colfax's reading of it,
    # research.colfax-intl.com/deepseek-r1-and-fp8-mixed-precision-training), which is why cuBLAS (without fast
    # accumulation) and CUTLASS promote partial sums to fp32 registers every few instructions. A CPU emulation on
    # K=5120 (a 13-bit truncating accumulator per k=32 instruction, scales product 1/64 to 1/4): promoted every 128
    # k, relative norm 7.7e-4 and no element beyond 1e-2; every 512 k, 1.5e-3 and none beyond 2e-2; never promoted,
    # 4.7e-3 but at a scales product of 1/4 one element in 20 beyond 2e-2 (the task asks for fp32 accumulation; that
    # kernel does not do it). Re-quantizing the inputs to e5m2 lands at 9e-2. So: the element rule at 2e-2 and a
    # relative-norm bound of 2e-2, four times the unpromoted error and a fifth of the e5m2 shortcut. To be measured
    # on the H200 (cuBLAS, the expert kernel, a Triton tl.dot).
    tolerance=Tolerance(atol=0.02, rtol=0.02, relative_norm=0.02),
    reference="gemm_fp8_reference.py",
    # torch._scaled_mm takes mat1 row-major and mat2 column-major (its notes in ATen, pytorch/pytorch#117190), so
    # B [N,K] goes in as B.t(); its use_fast_accum defaults to False: cuBLAS promotes, as the task asks.
    baselines=(TrustedFile("cublas_fp8", "cuBLAS FP8 (torch._scaled_mm)", "baseline.py", "gemm_fp8_baseline.py"),),
    starter_prefix="gemm_fp8",
    knowledge_pages=("hopper/wgmma-fp8.md",),
    draws={"scale_a": _FP8_SCALE, "scale_b": _FP8_SCALE},
    tensor_operands="fp8",  # wgmma with FP8 operands (QGMMA), not bf16 wgmma on converted inputs
)

FAMILIES: dict[str, TaskFamily] = {f.name: f for f in (GEMM_BF16, MHA_FWD, MHA_BWD, GEMM_FP8)}


def family_of(op_type: str, registry: Mapping[str, TaskFamily] | None = None) -> TaskFamily | None:
    """The family whose tasks have this op_type; None for a task of no registered family."""
    families = FAMILIES if registry is None else registry
    return next((f for f in families.values() if f.op_type == op_type), None)


def draw_for(op_type: str, input_name: str) -> Draw:
    """How the input of that name is drawn in a task of this op_type (standard normal unless its family says)."""
    family = family_of(op_type)
    return family.draw(input_name) if family is not None else NORMAL
