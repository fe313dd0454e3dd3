"""A language is what the registry says (evaluator/languages.py), down to how the candidate process loads its build.

A made-up language added to a temporary registry, whose build is the submitted Python file and whose loader is a
plain Python module, goes through the real pipeline on the CPU: the candidate process loads it with that loader,
the private copy of its kernel cache reaches the loader, and its `run` passes every workload.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from evaluator import languages
from evaluator.both_sides.hostile_files import trusted_beside
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import CompileResult, OverallStatus, Status
from evaluator.build.compile import CompiledKernel, find_nvcc
from evaluator.pipeline import Options, evaluate
from tests.support.toy_language_loader import CACHE_FILE

HERE = Path(__file__).resolve().parent
TASK = load_task(HERE / "tasks" / "tiny_gemm")
EVALUATOR = Path(languages.__file__).resolve().parent
TOY_SOURCE = "def run(A, B, C):\n    C.copy_(A @ B.t())\n"
# The SASS stage counts the build's device code before any candidate process starts; a Python file has none, so
# the toy build brings an empty kernel's cubin along.
STUB_KERNEL = 'extern "C" __global__ void toy_kernel() {}\n'


@pytest.fixture(scope="module")
def stub_cubin(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("toy-stub")
    (folder / "stub.cu").write_text(STUB_KERNEL)
    subprocess.run(
        [find_nvcc(), "-cubin", "-arch=sm_90a", "-o", str(folder / "stub.cubin"), str(folder / "stub.cu")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return folder / "stub.cubin"


@pytest.fixture
def toy(monkeypatch, stub_cubin) -> languages.Language:
    def build(source, task, chosen, arch, build_dir, timeout_s, jail) -> CompiledKernel:
        build_dir.mkdir(parents=True, exist_ok=True)
        library = build_dir / "kernel.toy"
        library.write_text(source)
        trusted = trusted_beside(build_dir)
        (trusted / "toy-cache").mkdir(parents=True, exist_ok=True)
        (trusted / "toy-cache" / CACHE_FILE).write_text("toy_kernel\n")
        shutil.copy(stub_cubin, trusted / "stub.cubin")
        result = CompileResult(True, ["toyc"], 0, 0.0, "", nvcc_version="toyc 1")
        return CompiledKernel(result, library, None, cubins=[trusted / "stub.cubin"], trusted_dir=trusted)

    language = languages.Language(
        "toy",
        ".toy",
        "kernel.toy",
        "toyc",
        lambda source, task: [],
        build,
        kernel_cache="toy-cache",
        loader="tests.support.toy_language_loader",
        reason_in_log=True,
    )
    monkeypatch.setitem(languages.LANGUAGES, "toy", language)
    return language


def test_a_made_up_language_is_loaded_by_its_own_loader_in_the_candidate_process(toy, tmp_path):
    """Mutations caught: the candidate process loading by a language name it knows (tvm_ffi for anything not
    Triton cannot load a .toy file), or the job file carrying no private copy of the language's kernel cache."""
    opts = Options(device_type="cpu", allow_unsandboxed=True, timeout_s=30, seed=b"fixed-test-seed!", workdir=tmp_path)
    v = evaluate(TOY_SOURCE, TASK, "sm_90a", workloads="headline", stages=["correctness"], options=opts, language="toy")
    assert v.language == "toy"
    assert v.status == OverallStatus.PASSED, [w.message for w in v.workloads]
    assert [w.status for w in v.workloads] == [Status.PASSED]
    assert v.workloads[0].correctness.trials == opts.trials


def test_an_unknown_language_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="unknown language 'toy'"):
        evaluate(TOY_SOURCE, TASK, "sm_90a", stages=["policy"], options=Options(device_type="cpu"), language="toy")


def _language_constants(tree: ast.AST) -> list[ast.AST]:
    """Nodes that treat "cuda"/"triton" as a language: compared with, defaulted to or passed as a `language`."""
    names = ("cuda", "triton")

    def is_name(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value in names

    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and "language" in ast.unparse(node):
            found += [node] if any(is_name(c) for c in (node.left, *node.comparators)) else []
        elif isinstance(node, ast.keyword) and node.arg == "language" and is_name(node.value):
            found.append(node)
        elif isinstance(node, ast.AnnAssign) and "language" in ast.unparse(node.target) and is_name(node.value):
            found.append(node)
        elif isinstance(node, ast.arguments):
            args = [*node.posonlyargs, *node.args]
            pairs = [
                *zip(args[len(args) - len(node.defaults) :], node.defaults, strict=True),
                *zip(node.kwonlyargs, node.kw_defaults, strict=True),
            ]
            found += [d for a, d in pairs if a.arg == "language" and is_name(d)]
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("get") and len(node.args) == 2:
            if is_name(node.args[1]) and "language" in ast.unparse(node.args[0]):
                found.append(node)
        elif isinstance(node, ast.BoolOp) and "language" in ast.unparse(node.values[0]):
            found += [v for v in node.values[1:] if is_name(v)]
    return found


# The verdict's `language` field defaults to the language of documents written before the field existed: data.
DATA_MODULES = {"both_sides/verdict.py"}


def test_no_evaluator_module_but_the_registry_names_a_language_for_behaviour():
    """Every module, the candidate process's included: a language named outside evaluator/languages.py is a second
    registry that a new language would have to find."""
    offenders = []
    for path in sorted(EVALUATOR.rglob("*.py")):
        if path.name == "languages.py" or path.relative_to(EVALUATOR).as_posix() in DATA_MODULES:
            continue
        for node in _language_constants(ast.parse(path.read_text())):
            offenders.append(f"{path.relative_to(EVALUATOR)}:{node.lineno}: {ast.unparse(node)}")
    assert not offenders, offenders


@pytest.mark.parametrize(
    "source",
    [
        'if job.get("language") == "triton":\n    pass\n',
        'def evaluate(source, language: str = "cuda"):\n    pass\n',
        'write_job(setup, language="cuda")\n',
        'class S:\n    language: str = "cuda"\n',
        'language = str(spec.get("language") or "cuda")\n',
    ],
)
def test_the_scan_sees_each_way_of_naming_a_language(source):
    assert _language_constants(ast.parse(source))


def test_each_registered_language_names_a_loader_of_the_candidate_process_that_exists():
    for lang in languages.LANGUAGES.values():
        assert lang.loader.startswith("evaluator.candidate_process."), lang.name
        assert (EVALUATOR.parent / (lang.loader.replace(".", "/") + ".py")).is_file(), lang.loader
