"""The Triton policy checks exactly what Triton compiles (evaluator/source_policy/triton_source.py).

Triton compiles, for each `@triton.jit` function, the text from the first line starting `def name(` of the
function's dedented lines; a `def` line inside a string (a decorator's argument, a nested kernel's docstring)
made it compile a body the policy never saw, which called exec while compiling. The extraction here is checked
against Triton's own on real files; the policy refuses every file where that text is not the function it
checked, every use of `jit` that would make Triton compile another function, coding declarations other than
UTF-8, and class-pattern keyword attributes that read what attribute access may not.
"""

from __future__ import annotations

import ast
import importlib.util
import sys

import pytest

from evaluator.source_policy import triton_source
from evaluator.source_policy.triton_policy import check_source
from tests.support.factories import REPO

ADVERSARIAL = REPO / "tests" / "adversarial"
HEAD = "import triton\nimport triton.language as tl\n\n"
BODY = "    offs = tl.arange(0, BLOCK)\n    tl.store(y_ptr + offs, tl.load(x_ptr + offs))\n"
RUN = "\n\ndef run(A, B, C):\n    k[(1,)](A, C, BLOCK=16)\n"


def kernel(decorators: str = "@triton.jit\n", body: str = BODY, name: str = "k") -> str:
    return f"{decorators}def {name}(x_ptr, y_ptr, BLOCK: tl.constexpr):\n{body}"


# Files whose kernels Triton extracts; `honest` says whether that text is the function Python parses.
EXTRACTION_CASES = {
    "plain": (HEAD + kernel() + RUN, True),
    "heuristics over jit, arguments over lines": (
        HEAD
        + kernel('@triton.heuristics(\n    {"BLOCK": lambda a: 16},\n)\n@triton.jit(\n    debug=False,\n)\n')
        + RUN,
        True,
    ),
    "signature on continued lines": (
        HEAD + "@triton.jit\ndef k(x_ptr, \\\n      y_ptr,\n      BLOCK: tl.constexpr):\n" + BODY + RUN,
        True,
    ),
    "docstring at column 0, top level": (
        HEAD + kernel(body='    """Copies.\ndef other(x):\n    pass\n"""\n' + BODY) + RUN,
        True,
    ),
    "class body": (
        HEAD + "class K:\n    @triton.jit\n    def k(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
        "        offs = tl.arange(0, BLOCK)\n        tl.store(y_ptr + offs, tl.load(x_ptr + offs))\n"
        "\n\nk = K.k\n" + RUN,
        True,
    ),  # fmt: skip
    "same name twice": (HEAD + kernel(body="    pass\n") + "\n\n" + kernel() + RUN, True),
    "CRLF line ends": ((HEAD + kernel() + RUN).replace("\n", "\r\n"), True),
    "CR line ends": ((HEAD + kernel() + RUN).replace("\n", "\r"), True),
    "kernel last, no newline at the end": (HEAD + RUN + "\n\n" + kernel().rstrip("\n"), True),
    "def in a decorator's string": (
        (ADVERSARIAL / "triton_source_decorator_string_def.py").read_text(),
        False,
    ),
    "def in a nested kernel's docstring": ((ADVERSARIAL / "triton_source_docstring_def.py").read_text(), False),
}


def _jit_functions(module) -> list:
    found = []
    for value in [*vars(module).values(), *([module.make()] if hasattr(module, "make") else [])]:
        while type(value).__name__ in ("Heuristics", "Autotuner"):
            value = value.fn
        if type(value).__name__ == "JITFunction":
            found.append(value)
    return found


@pytest.mark.parametrize("case", list(EXTRACTION_CASES))
def test_the_extracted_text_is_the_text_triton_compiles(case, tmp_path):
    pytest.importorskip("triton")
    source, honest = EXTRACTION_CASES[case]
    path = tmp_path / "cand.py"
    path.write_bytes(source.encode("utf-8"))
    spec = importlib.util.spec_from_file_location(f"cand_{abs(hash(case))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines kernels only: Triton reads their text, nothing compiles
    tree = ast.parse(source)
    lines = triton_source.file_lines(source)
    jitted = _jit_functions(module)
    assert jitted
    for jit in jitted:
        fn = max(
            (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == jit.__name__),
            key=lambda n: n.lineno,  # the last definition is the one the module holds
        )
        extracted = triton_source.extracted_source(lines, fn)
        assert extracted == jit.src
        if jit.__name__ in ("k", "copy_kernel"):  # the case's kernel (a smuggle file has an honest one too)
            assert triton_source.same_function(extracted, fn) is honest
    sys.modules.pop(spec.name, None)


def kernel_source_findings(source: str) -> list:
    return [f for f in check_source(source, ["A", "B", "C"]) if f.rule in ("kernel-source", "encoding")]


@pytest.mark.parametrize("case", [c for c, (_, honest) in EXTRACTION_CASES.items() if honest])
def test_honest_kernels_in_every_layout_pass(case):
    assert kernel_source_findings(EXTRACTION_CASES[case][0]) == []


@pytest.mark.parametrize(
    "name",
    ["triton_source_decorator_string_def.py", "triton_source_docstring_def.py"],
)
def test_a_def_line_in_a_string_is_refused(name):
    found = kernel_source_findings((ADVERSARIAL / name).read_text())
    assert [f.rule for f in found] == ["kernel-source"]
    assert "the text Triton would compile" in found[0].message and found[0].text.startswith("def copy_kernel(")


JIT_MISUSE = {
    "called on a function": kernel(decorators="") + "\n\nk2 = triton.jit(k)\n",
    "called on a lambda": "k2 = triton.jit(lambda x_ptr: tl.load(x_ptr))\n",
    "bound to another name": "j = triton.jit\n\n\n" + kernel("@j\n"),
    "imported under another name": "from triton import jit as J\n\n\n" + kernel("@J\n"),
    "module imported under another name": "import triton as tr\n\n\n" + kernel("@tr.jit\n"),
    "a jit of the file's own": "def jit(f):\n    return f\n\n\n" + kernel("@jit\n"),
    "jit rebound after its import": "from triton import jit\n\njit = triton.heuristics({})\n\n" + kernel("@jit\n"),
    "triton rebound": "triton = tl\n\n\n" + kernel(),
    "over another decorator": "def deco(f):\n    return f\n\n\n" + kernel("@triton.jit\n@deco\n"),
    "under another decorator": "def deco(f):\n    return f\n\n\n" + kernel("@deco\n@triton.jit\n"),
    "twice": kernel("@triton.jit\n@triton.jit\n"),
    "inside a decorator expression": kernel("@[triton.jit][0]\n"),
    "on an async function": "@triton.jit\nasync def k(x_ptr):\n    pass\n",
}


@pytest.mark.parametrize("case", list(JIT_MISUSE))
def test_jit_anywhere_but_a_kernels_innermost_decorator_is_refused(case):
    found = kernel_source_findings(HEAD + JIT_MISUSE[case] + RUN)
    assert any(f.rule == "kernel-source" for f in found), found


@pytest.mark.parametrize(
    "decorators",
    [
        "@triton.jit\n",
        "@triton.jit(do_not_specialize=[0])\n",
        '@triton.heuristics({"BLOCK": lambda a: 16})\n@triton.jit\n',
    ],
)
def test_the_usual_kernel_decorators_pass(decorators):
    assert check_source(HEAD + kernel(decorators) + RUN, ["A", "B", "C"]) == []


def test_jit_imported_by_name_passes():
    source = "import triton\nfrom triton import jit\nimport triton.language as tl\n\n" + kernel("@jit\n") + RUN
    assert check_source(source, ["A", "B", "C"]) == []


@pytest.mark.parametrize("coding", ["utf-7", "latin-1", "cp1252", "no-such-codec"])
def test_a_coding_declaration_other_than_utf8_is_refused(coding):
    found = kernel_source_findings(f"# -*- coding: {coding} -*-\n" + HEAD + kernel() + RUN)
    assert [f.rule for f in found] == ["encoding"]


def test_the_utf7_smuggle_is_refused():
    found = kernel_source_findings((ADVERSARIAL / "triton_source_coding_utf7.py").read_text())
    assert [f.rule for f in found] == ["encoding"] and "utf-7" in found[0].message


@pytest.mark.parametrize("coding", ["utf-8", "UTF8", "utf_8"])
def test_a_utf8_coding_declaration_passes(coding):
    assert check_source(f"# coding: {coding}\n" + HEAD + kernel() + RUN, ["A", "B", "C"]) == []


@pytest.mark.parametrize(
    ("pattern", "rule"),
    [
        ("int(__class__=c)", "dunder-attribute"),
        ("int(_private=c)", "dunder-attribute"),
        ("int(real=c)", "host-attribute"),
    ],
)
def test_class_pattern_keyword_attributes_are_checked_like_attribute_reads(pattern, rule):
    host = f"    match A:\n        case {pattern}:\n            pass\n"
    source = HEAD + kernel() + RUN.replace("def run(A, B, C):\n", "def run(A, B, C):\n" + host)
    found = check_source(source, ["A", "B", "C"])
    assert [f.rule for f in found] == [rule] and found[0].text == f"case {pattern}:"


def test_class_pattern_on_an_allowed_attribute_passes():
    host = "    match A:\n        case torch.Tensor(shape=s):\n            pass\n"
    source = "import torch\n" + HEAD + kernel() + RUN.replace("def run(A, B, C):\n", "def run(A, B, C):\n" + host)
    assert check_source(source, ["A", "B", "C"]) == []


@pytest.mark.slow
def test_the_smuggled_exec_runs_in_the_compile_only_past_the_policy(tmp_path):
    """End to end on CPU: with the policy skipped the compile prints the smuggled exec's marker; through the
    policy the file is refused and nothing is compiled."""
    pytest.importorskip("triton")
    from evaluator.both_sides.taskdata import find_task
    from evaluator.both_sides.verdict import OverallStatus
    from evaluator.pipeline import Options, evaluate

    task = find_task(REPO / "tasks", "gemm_n4096_k4096")
    source = (ADVERSARIAL / "triton_source_decorator_string_def.py").read_text()

    def verdict(skip: bool):
        opts = Options(compile_timeout_s=300, skip_source_policy=skip)
        return evaluate(source, task, "sm_90a", stages=("policy", "compile"), options=opts, language="triton")

    unchecked = verdict(skip=True)
    assert unchecked.compile is not None and "SMUGGLED-EXEC-RAN" in unchecked.compile.output
    checked = verdict(skip=False)
    assert checked.status == OverallStatus.POLICY_REJECTED and checked.compile is None


def test_a_kernel_inside_a_kernel_is_refused_without_extracting_it():
    """Triton compiles no function defined in a kernel; each nested kernel's text would also hold all those
    inside it, which would make the extraction quadratic in the file's size."""
    nested = "@triton.jit\ndef outer(x_ptr):\n    @triton.jit\n    def inner(x_ptr):\n        pass\n\n    pass\n"
    found = kernel_source_findings(HEAD + nested + RUN)
    assert [(f.rule, f.line) for f in found] == [("kernel-source", 7)]
    assert "the kernel 'inner' is defined inside the kernel 'outer'" in found[0].message


@pytest.mark.parametrize(
    "swap",
    ["k.fn.__code__ = other.__code__", "k.__wrapped__ = other", "k.src = 'def k(x_ptr):\\n    pass\\n'"],
)
def test_what_triton_reads_back_cannot_be_swapped_after_the_check(swap):
    """Triton reads a kernel's text through its code object (`__code__`, `__wrapped__` for inspect.unwrap) and
    keeps it in `src`: none of them may be reached from the file."""
    source = HEAD + kernel() + "\n\ndef other(x_ptr):\n    pass\n\n\n" + swap + "\n" + RUN
    assert {f.rule for f in check_source(source, ["A", "B", "C"])} & {"dunder-attribute", "host-attribute"}
