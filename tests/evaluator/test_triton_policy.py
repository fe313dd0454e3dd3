"""The Triton policy on the AST: the reference file passes; each rule rejects its case and quotes the line."""

from __future__ import annotations

import pytest

from evaluator.source_policy.triton_policy import check_source
from tests.support.factories import REPO

REFERENCE = REPO / "tasks/gemm_n4096_k4096/solutions/triton_tma_wgmma/kernel.py"

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, N: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, N), tl.zeros((N,), tl.float32))\n\n\n"


def _run(body: str) -> str:
    return HEADER + "def run(A, B, C):\n" + "".join(f"    {line}\n" for line in body.splitlines())


def test_the_reference_triton_gemm_passes_the_policy():
    assert check_source(REFERENCE.read_text(), ["A", "B", "C"]) == []


def test_host_code_may_look_view_allocate_and_launch():
    body = (
        "M, K = A.shape\n"
        "s = A.stride(0) + B.stride()[1] + A.element_size()\n"
        "Bt = B.t().view(torch.bfloat16)\n"
        "ws = torch.empty((M, 4), dtype=torch.float32, device=A.device)\n"
        "assert C.dtype == torch.bfloat16 and A.is_contiguous()\n"
        "k[(triton.cdiv(M, 128),)](ws, N=triton.next_power_of_2(K))\n"
    )
    assert check_source(_run(body), ["A", "B", "C"]) == []


@pytest.mark.parametrize(
    ("body", "rule", "quoted"),
    [
        ("C.copy_(A @ B.t())", "matmul-operator", "C.copy_(A @ B.t())"),
        ("X = A\nX @= B", "matmul-operator", "X @= B"),
        ("torch.matmul(A, B.t(), out=C)", "torch-compute", "torch.matmul(A, B.t(), out=C)"),
        ("torch.nn.functional.linear(A, B)", "torch-compute", "torch.nn.functional.linear(A, B)"),
        ("torch.ops.aten.mm(A, B)", "torch-compute", "torch.ops.aten.mm(A, B)"),
        ("f = torch.mm", "torch-compute", "f = torch.mm"),
        ("torch.Tensor.matmul(A, B.t())", "torch-compute", "torch.Tensor.matmul(A, B.t())"),
        ("torch.bfloat16.to_complex()", "torch-compute", "torch.bfloat16.to_complex()"),
        ("C.copy_(A)", "host-attribute", "C.copy_(A)"),
        ("g = A.matmul", "host-attribute", "g = A.matmul"),
        ("A.float()", "host-attribute", "A.float()"),
        ("t = torch\nt.mm(A, B)", "module-alias", "t = torch"),
        ("exec('import os')", "dynamic-code", "exec('import os')"),
        ("eval('1')", "dynamic-code", "eval('1')"),
        ("compile('1', 'x', 'eval')", "dynamic-code", "compile('1', 'x', 'eval')"),
        ("__import__('os')", "dynamic-code", "__import__('os')"),
        ("getattr(torch, 'matmul')(A, B)", "dynamic-code", "getattr(torch, 'matmul')(A, B)"),
        ("open('/etc/passwd').read()", "dynamic-code", "open('/etc/passwd').read()"),
        ("A.__class__.__subclasses__()", "dunder-attribute", "A.__class__.__subclasses__()"),
        ("triton.runtime.driver.active", "module-attribute", "triton.runtime.driver.active"),
        ("triton.knobs.compilation.always_compile = True", "module-attribute", "triton.knobs"),
    ],
)
def test_each_rule_rejects_its_case_and_quotes_the_line(body: str, rule: str, quoted: str):
    findings = check_source(_run(body), ["A", "B", "C"])
    hits = [f for f in findings if f.rule == rule]
    assert hits, findings
    assert quoted in hits[0].text
    assert hits[0].line is not None and hits[0].line > HEADER.count("\n")


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        ("import os", "import"),
        ("import subprocess", "import"),
        ("import importlib", "import"),
        ("import socket", "import"),
        ("import torch.nn.functional as F", "import"),
        ("from torch.nn import functional", "import"),
        ("from torch import matmul", "torch-compute"),
        ("from triton import runtime", "import"),
        ("from . import helper", "import"),
        ("from math import *", "import"),
    ],
)
def test_imports_outside_the_allowlist_are_rejected(line: str, rule: str):
    findings = check_source(line + "\n" + _run("pass"), ["A", "B", "C"])
    hit = next(f for f in findings if f.rule == rule)
    assert hit.line == 1 and hit.text == line


def test_torch_inside_a_kernel_is_rejected():
    src = HEADER.replace("    tl.store", "    torch.cuda.synchronize()\n    tl.store") + "def run(A, B, C):\n    pass\n"
    findings = check_source(src, ["A", "B", "C"])
    assert [f.rule for f in findings] == ["torch-compute"]
    assert findings[0].text == "torch.cuda.synchronize()"


def test_a_syntax_error_is_a_finding_with_its_line():
    findings = check_source("import triton\n\ndef run(A, B, C)\n    pass\n")
    assert [f.rule for f in findings] == ["syntax"]
    assert findings[0].line == 3 and findings[0].text == "def run(A, B, C)"
    assert "syntax error" in findings[0].message


def test_run_must_match_the_task_signature():
    findings = check_source(HEADER + "def run(A, C):\n    pass\n", ["A", "B", "C"])
    assert [f.rule for f in findings] == ["run-signature"]
    assert "def run(A, B, C)" in findings[0].message and findings[0].text == "def run(A, C):"
    star = check_source(HEADER + "def run(*tensors):\n    pass\n", ["A", "B", "C"])
    assert {f.rule for f in star} == {"run-signature"}


def test_missing_run_and_missing_kernel_are_findings():
    rules = {f.rule for f in check_source("import triton\n\ndef helper(A):\n    return A.shape\n", ["A", "C"])}
    assert rules == {"missing-run", "no-kernel"}


def test_bytes_must_be_utf8_and_small():
    assert check_source(b"\xff\xfe")[0].rule == "encoding"
    assert check_source("#" * (1024 * 1024 + 1))[0].rule == "size"
