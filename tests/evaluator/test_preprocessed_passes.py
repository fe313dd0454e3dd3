"""The policy after macro expansion reads the text the compiler compiled: every pass nvcc preprocesses, kept by the
compile itself (evaluator/build/compile.py `kept_passes`), never a second preprocessor run.

A second run (`nvcc -E`) preprocessed the device pass only, without the compile's flags: host code under
`#ifndef __CUDA_ARCH__` was not in it, and a source that fails without `__OPTIMIZE__` made it fail, which skipped the
check. Either way a pasted dlopen or a stringized `.incbin` reached the compiled library unseen. And a `#line` whose
file name comes from a macro attributed every later line to another file, out of the check's view.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evaluator.build.compile import PASS_FILES, PASSES_DIR, compile_kernel, kept_passes
from evaluator.source_policy.policy import check_preprocessed, check_source

needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="nvcc not installed"
)

ENTRY = """
#include <tvm/ffi/c_api.h>
extern "C" __attribute__((visibility("default"))) int __tvm_ffi_run(void*, const TVMFFIAny*, int32_t, TVMFFIAny* r) {
  r->type_index = kTVMFFINone;
  return 0;
}
"""
PASTED_DLOPEN = '#include <dlfcn.h>\n#define GLUE(x, y) x##y\nvoid* load() { return GLUE(dl, open)("x", RTLD_NOW); }\n'
STRINGIZED_INCBIN = '#define S(...) #__VA_ARGS__\nasm("\\t" S(.inc) "bin \\"/etc/ld.so.cache\\"");\n'


def _expanded_findings(tmp_path: Path, source: str) -> list[str]:
    compiled = compile_kernel(source + ENTRY, "sm_90a", tmp_path / "build", cache_dir=None)
    assert compiled.result.ok, compiled.result.output
    assert compiled.unchecked is None
    assert compiled.preprocessed is not None, "a successful compile always has its passes to check"
    return [f.message for f in check_preprocessed(compiled.preprocessed)]


@needs_nvcc
def test_host_only_code_is_checked_after_macro_expansion(tmp_path):
    """Mutation caught: the device pass alone (`nvcc -E`, `__CUDA_ARCH__` defined) never shows this dlopen."""
    source = f"#ifndef __CUDA_ARCH__\n{PASTED_DLOPEN}#endif\n"
    assert not [f for f in check_source(source) if f.rule == "dynamic-loading"], "the raw check alone sees it"
    assert any("after macro expansion: 'dlopen'" in m for m in _expanded_findings(tmp_path, source))


@needs_nvcc
def test_a_source_only_the_compiles_flags_preprocess_is_still_checked(tmp_path):
    """Mutation caught: a preprocessor run without -O3 stops at this #error, and its failure skipped the check."""
    source = f"#ifndef __OPTIMIZE__\n#error only the optimised build\n#endif\n{STRINGIZED_INCBIN}"
    assert any("assembler .incbin" in m for m in _expanded_findings(tmp_path, source))


def _passes(tmp_path: Path) -> Path:
    folder = tmp_path / PASSES_DIR
    folder.mkdir(parents=True)
    return folder


def test_a_pass_missing_after_a_successful_compile_is_unchecked(tmp_path):
    (_passes(tmp_path) / PASS_FILES[0]).write_text('# 1 "kernel.cu"\nint x;\n')
    text, unchecked = kept_passes(tmp_path, compiled=True)
    assert text is None and unchecked is not None and PASS_FILES[1] in unchecked
    # A failed compile stops at its first failing step: what it kept is checked, a pass it never reached is not.
    text, unchecked = kept_passes(tmp_path, compiled=False)
    assert unchecked is None and text is not None and "int x;" in text


def test_a_pass_planted_as_a_link_is_refused_not_read(tmp_path):
    folder = _passes(tmp_path)
    (tmp_path / "elsewhere.ii").write_text("int y;\n")
    os.symlink(tmp_path / "elsewhere.ii", folder / PASS_FILES[0])
    (folder / PASS_FILES[1]).write_text("int z;\n")
    for compiled in (True, False):
        text, unchecked = kept_passes(tmp_path, compiled=compiled)
        assert text is None and unchecked is not None and "could not be read" in unchecked


@pytest.mark.parametrize("operands", ["10 ELSEWHERE", "ELSEWHERE_AND_LINE", "10 /**/ ELSEWHERE"])
def test_line_with_a_macro_operand_is_refused(operands):
    """Mutation caught: only a quoted file name was refused, and `#line 10 F` renamed the rest of the source."""
    source = f'#define ELSEWHERE "elsewhere.h"\n#define ELSEWHERE_AND_LINE 10 ELSEWHERE\n#line {operands}\nint x;\n'
    found = [f for f in check_source(source) if f.rule == "include-path"]
    assert [f.line for f in found] == [3] and "#line may give only a line number" in found[0].message


def test_line_with_a_number_only_passes():
    assert [f for f in check_source("#line 40\nint x;\n#  line 7 // why\n") if f.rule == "include-path"] == []


@needs_nvcc
@pytest.mark.no_compile_cache  # a cached compile of the kernel would never read its passes
def test_a_compile_whose_passes_cannot_be_read_is_policy_rejected(monkeypatch):
    """Mutation caught: a missing preprocessed text skipped the policy after macro expansion (the verdict passed)."""
    from evaluator.both_sides.taskdata import load_task
    from evaluator.both_sides.verdict import OverallStatus
    from evaluator.build import compile as compile_module
    from evaluator.pipeline import Options, evaluate
    from tests.support.factories import LIGHT_KERNEL

    monkeypatch.setattr(compile_module, "kept_passes", lambda _workdir, *, compiled: (None, "planted reason"))
    tiny = load_task(Path(__file__).resolve().parent / "tasks" / "tiny_gemm")
    v = evaluate(LIGHT_KERNEL, tiny, "sm_90a", stages=["compile"], options=Options(device_type="cpu"))
    assert v.status == OverallStatus.POLICY_REJECTED
    assert [f.message for f in v.policy] == ["planted reason"]
    assert v.compile is not None and v.compile.output.startswith("[evaluator] the compile log is withheld")
