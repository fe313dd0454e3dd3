"""Write the PTXBench task suite (tasks/<name>/) from the templates in scripts/suite_templates/.

Tasks are data; this script is how they were made. Running it again reproduces them byte for byte (a test
checks), so change a task here and re-run rather than editing the generated files by hand.

    python scripts/make_suite.py            # write tasks/
    python scripts/make_suite.py --check    # exit 1 if tasks/ differs from what this script would write
    python scripts/make_suite.py --out DIR  # write somewhere else

What a family of tasks shares (group, FLOPs, tolerance, baselines, reference, starters) is its entry in the
task-families registry (evaluator/both_sides/task_families.py); the builders below add each task's definition text, axes and
workloads. Only the files listed per task below are written; anything else in a task folder (solutions/, ...) and
tasks/packs/ are left alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from evaluator.both_sides.arches import ARCHES  # noqa: E402
from evaluator.both_sides.task_families import GEMM_BF16, GEMM_FP8, MHA_BWD, MHA_FWD, TaskFamily  # noqa: E402
from evaluator.languages import LANGUAGES  # noqa: E402

TEMPLATES = Path(__file__).resolve().parent / "suite_templates"
DEFAULT_ROOT = REPO / "tasks"

# uuid5 namespace of the suite: workload ids are uuid5(NAMESPACE, "<task>/M=<m>") or "<task>/S=<s>".
NAMESPACE = uuid.UUID("6f1f7a52-0d0e-4c55-9d1e-5054584245e4")

GEMM_SHAPES = ((7168, 5120), (4096, 4096), (2048, 4096), (28672, 4096), (256, 7168))  # (N, K)
GEMM_M = (128, 1024, 4096, 8192)
GEMM_HEADLINE_M = 8192
FP8_GEMM_SHAPES = ((7168, 5120),)  # (N, K): the shape of the bf16 task with the expert kernel
ATTN_BATCH = 4
ATTN_HEADS = 48
ATTN_HEAD_DIMS = (64, 96, 128)  # forward and backward
# The forward also at d=256 (both library baselines take it on Hopper: cuDNN's prefill and PyTorch's
# FlashAttention-2 backend go to d=256); the backward stops at 128.
ATTN_FWD_HEAD_DIMS = (*ATTN_HEAD_DIMS, 256)
# The family's CUDA starter gives a query row one thread; at d=256 its accumulator and tiles outgrow the registers
# and the 48 KiB of static shared memory, so that head dimension has its own (two threads a row).
ATTN_OWN_CUDA_STARTER = {256: "mha_fwd_d256_starter.cu"}
ATTN_S = (512, 1024, 2048, 4096, 8192, 16384)
ATTN_HEADLINE_S = 4096

ATTN_AXES = {
    "B": {"type": "const", "value": ATTN_BATCH, "description": "batch"},
    "H": {"type": "const", "value": ATTN_HEADS, "description": "attention heads (queries and keys alike)"},
    "S": {"type": "var", "description": "sequence length (queries = keys)"},
}

PY_CAUSAL_LINE = "CAUSAL = False  # query i attends keys j <= i when True (S_q == S_k, top-left aligned)"
CU_CAUSAL_LINE = "constexpr bool kCausal = false;"


@dataclass(frozen=True)
class TaskFiles:
    """One task folder's generated files: file name -> exact text."""

    name: str
    files: dict[str, str]


def targets(family: TaskFamily) -> dict[str, dict[str, object]]:
    """Every architecture of the registry (evaluator/both_sides/arches.py): the families that count and what they are,
    and which operand type's tensor-core work counts where the task family names one."""
    only = (
        f"; only {family.tensor_operands} operands count toward the tensor-core share" if family.tensor_operands else ""
    )
    return {a.name: {"families": list(a.families), "note": a.target_note + only} for a in ARCHES.values()}


def knowledge_packs() -> dict[str, str]:
    """Architecture -> the id of its knowledge pack under tasks/packs/, as the registry names them."""
    return {a.name: a.knowledge_pack for a in ARCHES.values() if a.knowledge_pack}


def workload_uuid(task: str, axis: str, value: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{task}/{axis}={value}"))


def _json(obj: object) -> str:
    return json.dumps(obj, indent=2) + "\n"


def _template(name: str, causal: bool | None = None) -> str:
    """A template's text; with `causal` given, its one causal-flag line set accordingly."""
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    if causal is None:
        return text
    if name.endswith(".py"):
        marker, replacement = PY_CAUSAL_LINE, PY_CAUSAL_LINE.replace("False", "True", 1)
    else:
        marker, replacement = CU_CAUSAL_LINE, "constexpr bool kCausal = true;"
    if text.count(marker) != 1:
        raise RuntimeError(f"{name}: expected the causal-flag line exactly once")
    return text.replace(marker, replacement) if causal else text


def _starters(family: TaskFamily, causal: bool | None = None) -> dict[str, str]:
    """The family's starter in each registered language that has starters: the template `<prefix>_<starter file>`."""
    return {
        lang.starter_file: _template(f"{family.starter_prefix}_{lang.starter_file}", causal)
        for lang in LANGUAGES.values()
        if lang.starter_file
    }


def _trusted_files(family: TaskFamily, causal: bool | None = None) -> dict[str, str]:
    """The family's baselines and input generator as task-folder files, from their templates."""
    files = [*family.baselines, *([family.input_generator] if family.input_generator else [])]
    return {f.file: _template(f.template, causal) for f in files}


def _workloads(task: str, axis: str, values: tuple[int, ...], inputs: tuple[str, ...]) -> str:
    lines = []
    for value in values:
        record = {
            "definition": task,
            "solution": None,
            "workload": {
                "uuid": workload_uuid(task, axis, value),
                "axes": {axis: value},
                "inputs": {name: {"type": "random"} for name in inputs},
            },
            "evaluation": None,
        }
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


def _ptxbench(task: str, family: TaskFamily, headline: str, causal: bool = False) -> str:
    data: dict[str, object] = {
        "definition": task,
        "group": family.group,
        "flops": family.flops_for(causal),
        "headline_workload": headline,
        "targets": targets(family),
        "baselines": [b.as_json() for b in family.baselines],
    }
    if family.input_generator is not None:
        data["input_generator"] = family.input_generator.as_json()
    data["starter"] = "starter.cu"
    data["starter_triton"] = "starter_triton.py"
    data["knowledge_packs"] = knowledge_packs()
    data["tolerance"] = family.tolerance_for(causal).as_json()
    return _json(data)


def family_task(
    family: TaskFamily, definition: dict, axis: str, values: tuple[int, ...], headline: int, causal: bool | None = None
) -> TaskFiles:
    """A task folder of `family`: the definition given, a workload per value of the one variable `axis` (every
    input drawn at random), and what the family's registry entry names (ptxbench.json, baselines, starters).
    `causal` picks the causal variant of attention templates and of the family's FLOPs and tolerance."""
    name = definition["name"]
    return TaskFiles(
        name,
        {
            "definition.json": _json(definition),
            "workloads.jsonl": _workloads(name, axis, values, tuple(definition["inputs"])),
            "ptxbench.json": _ptxbench(name, family, workload_uuid(name, axis, headline), bool(causal)),
            **_trusted_files(family, causal),
            **_starters(family, causal),
        },
    )


def gemm_task(n: int, k: int) -> TaskFiles:
    name = f"gemm_n{n}_k{k}"
    definition = {
        "name": name,
        "op_type": GEMM_BF16.op_type,
        "description": (
            f"BF16 GEMM with fp32 accumulation: C[M,N] = A[M,K] @ B[N,K]^T, N={n}, K={k} (B is stored row-major "
            f"as [N,K], i.e. the weight layout of a linear layer). The headline workload is M={GEMM_HEADLINE_M}."
        ),
        "axes": {
            "M": {"type": "var", "description": "rows of A and C (tokens)"},
            "N": {"type": "const", "value": n, "description": "rows of B, columns of C"},
            "K": {"type": "const", "value": k, "description": "reduction dimension"},
        },
        "inputs": {
            "A": {"shape": ["M", "K"], "dtype": "bfloat16", "description": "left operand, row-major"},
            "B": {
                "shape": ["N", "K"],
                "dtype": "bfloat16",
                "description": "right operand, row-major [N,K]; the product uses its transpose",
            },
        },
        "outputs": {
            "C": {
                "shape": ["M", "N"],
                "dtype": "bfloat16",
                "description": "A @ B^T, rounded to bf16 from an fp32 accumulator",
            }
        },
        "reference": _template(GEMM_BF16.reference),
        "tags": ["status:verified", "suite:ptxbench", "gemm", "bf16"],
    }
    return family_task(GEMM_BF16, definition, "M", GEMM_M, GEMM_HEADLINE_M)


def gemm_fp8_task(n: int, k: int) -> TaskFiles:
    family = GEMM_FP8
    name = f"gemm_fp8_n{n}_k{k}"
    definition = {
        "name": name,
        "op_type": family.op_type,
        "description": (
            f"FP8 GEMM with per-tensor scales and fp32 accumulation: C[M,N] = (A * scale_a) @ (B * scale_b)^T, "
            f"N={n}, K={k}. A[M,K] and B[N,K] are float8_e4m3fn, row-major (B in the weight layout of a linear "
            f"layer); scale_a and scale_b are float32 tensors of one element (in device memory, as per-tensor "
            f"scales are); C is bf16. Accumulate in fp32: FP8 tensor-core accumulators keep fewer bits, so promote "
            f"their partial sums to fp32 at least every 512 elements of K. The headline workload is "
            f"M={GEMM_HEADLINE_M}."
        ),
        "axes": {
            "M": {"type": "var", "description": "rows of A and C (tokens)"},
            "N": {"type": "const", "value": n, "description": "rows of B, columns of C"},
            "K": {"type": "const", "value": k, "description": "reduction dimension"},
        },
        "inputs": {
            "A": {"shape": ["M", "K"], "dtype": "float8_e4m3fn", "description": "left operand, row-major"},
            "B": {
                "shape": ["N", "K"],
                "dtype": "float8_e4m3fn",
                "description": "right operand, row-major [N,K]; the product uses its transpose",
            },
            "scale_a": {"shape": [], "dtype": "float32", "description": "per-tensor scale of A (one element)"},
            "scale_b": {"shape": [], "dtype": "float32", "description": "per-tensor scale of B (one element)"},
        },
        "outputs": {
            "C": {
                "shape": ["M", "N"],
                "dtype": "bfloat16",
                "description": "scale_a * scale_b * (A @ B^T), rounded to bf16 from an fp32 accumulator",
            }
        },
        "reference": _template(family.reference),
        "tags": ["status:verified", "suite:ptxbench", "gemm", "fp8"],
    }
    return family_task(family, definition, "M", GEMM_M, GEMM_HEADLINE_M)


def _mask_words(causal: bool) -> str:
    return "causal mask (query i attends keys j <= i)" if causal else "no mask"


def _bhsd(description: str) -> dict:
    return {"shape": ["B", "H", "S", "D"], "dtype": "bfloat16", "description": description}


def mha_fwd_task(d: int, causal: bool) -> TaskFiles:
    name = f"mha_with_lse_d{d}" + ("_causal" if causal else "")
    definition = {
        "name": name,
        "op_type": MHA_FWD.op_type,
        "description": (
            f"Multi-head attention forward with log-sum-exp, bf16 in and out, fp32 accumulation: "
            f"O = softmax(Q K^T / sqrt(D)) V and LSE[b,h,i] = log(sum_j exp(Q_i . K_j / sqrt(D))) (natural log, "
            f"fp32), over the keys row i attends. B={ATTN_BATCH}, H={ATTN_HEADS}, D={d}, {_mask_words(causal)}; "
            f"the scale 1/sqrt(D) is fixed, not an input. The headline workload is S={ATTN_HEADLINE_S}."
        ),
        "axes": {**ATTN_AXES, "D": {"type": "const", "value": d, "description": "head dimension"}},
        "inputs": {
            "Q": _bhsd("queries"),
            "K": _bhsd("keys"),
            "V": _bhsd("values"),
        },
        "outputs": {
            "O": _bhsd("attention output"),
            "LSE": {
                "shape": ["B", "H", "S"],
                "dtype": "float32",
                "description": "natural-log sum of exp(scaled scores) per query row (the softmax denominator's log)",
            },
        },
        "reference": _template(MHA_FWD.reference, causal),
        "tags": ["status:verified", "suite:ptxbench", "attention", "forward", "bf16"] + (["causal"] if causal else []),
    }
    task = family_task(MHA_FWD, definition, "S", ATTN_S, ATTN_HEADLINE_S, causal)
    if d not in ATTN_OWN_CUDA_STARTER:
        return task
    return replace(task, files={**task.files, "starter.cu": _template(ATTN_OWN_CUDA_STARTER[d], causal)})


def mha_bwd_task(d: int, causal: bool) -> TaskFiles:
    name = f"mha_bwd_d{d}" + ("_causal" if causal else "")
    definition = {
        "name": name,
        "op_type": MHA_BWD.op_type,
        "description": (
            f"Multi-head attention backward, bf16 in and out, fp32 accumulation. With P = softmax(Q K^T / sqrt(D)) "
            f"({_mask_words(causal)}) recomputed as exp(Q K^T / sqrt(D) - LSE), compute dV = P^T dO, "
            f"dS = P * (dO V^T - rowsum(dO * O)), dQ = dS K / sqrt(D), dK = dS^T Q / sqrt(D). O and LSE are the "
            f"forward pass's outputs for the same Q, K, V (the task's input generator computes them). "
            f"B={ATTN_BATCH}, H={ATTN_HEADS}, D={d}. The headline workload is S={ATTN_HEADLINE_S}."
        ),
        "axes": {**ATTN_AXES, "D": {"type": "const", "value": d, "description": "head dimension"}},
        "inputs": {
            "Q": _bhsd("queries"),
            "K": _bhsd("keys"),
            "V": _bhsd("values"),
            "O": _bhsd("forward output for Q, K, V"),
            "dO": _bhsd("gradient of the loss with respect to O"),
            "LSE": {
                "shape": ["B", "H", "S"],
                "dtype": "float32",
                "description": "forward log-sum-exp per query row (natural log)",
            },
        },
        "outputs": {
            "dQ": _bhsd("gradient with respect to Q"),
            "dK": _bhsd("gradient with respect to K"),
            "dV": _bhsd("gradient with respect to V"),
        },
        "reference": _template(MHA_BWD.reference, causal),
        "tags": ["status:verified", "suite:ptxbench", "attention", "backward", "bf16"] + (["causal"] if causal else []),
    }
    return family_task(MHA_BWD, definition, "S", ATTN_S, ATTN_HEADLINE_S, causal)


def build_suite() -> list[TaskFiles]:
    """Every task of the suite with its generated files, in a fixed order."""
    tasks = [gemm_task(n, k) for n, k in GEMM_SHAPES]
    for causal in (False, True):
        tasks += [mha_fwd_task(d, causal) for d in ATTN_FWD_HEAD_DIMS]
    for causal in (False, True):
        tasks += [mha_bwd_task(d, causal) for d in ATTN_HEAD_DIMS]
    tasks += [gemm_fp8_task(n, k) for n, k in FP8_GEMM_SHAPES]
    return tasks


def differences(root: Path) -> list[str]:
    """Generated files that are missing under `root` or differ from what build_suite() writes."""
    out = []
    for task in build_suite():
        for file, text in task.files.items():
            path = root / task.name / file
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                out.append(str(path))
    return out


def write_suite(root: Path) -> list[Path]:
    written = []
    for task in build_suite():
        folder = root / task.name
        folder.mkdir(parents=True, exist_ok=True)
        for file, text in task.files.items():
            path = folder / file
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_ROOT, help="tasks folder to write (default: tasks/)")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any difference")
    args = parser.parse_args(argv)
    if args.check:
        diff = differences(args.out)
        for path in diff:
            print(f"differs: {path}")
        return 1 if diff else 0
    written = write_suite(args.out)
    print(f"wrote {len(written)} files for {len(build_suite())} tasks under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
