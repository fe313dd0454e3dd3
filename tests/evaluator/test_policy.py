"""Policy stage: each rule, comments and strings allowed, CUTLASS allowed, the offending line quoted."""

from __future__ import annotations

from evaluator.source_policy.policy import MAX_SOURCE_BYTES, check_source, strip_comments

RUN = "\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);\n"
OK = "#include <tvm/ffi/function.h>\nvoid run_impl() {}\n" + RUN


def rules(source: str) -> list[str]:
    return [f.rule for f in check_source(source)]


def test_clean_source_passes():
    assert check_source(OK) == []


def test_missing_run_export():
    findings = check_source("void run_impl() {}\n")
    assert [f.rule for f in findings] == ["missing-run"]
    assert rules("TVM_FFI_DLL_EXPORT_TYPED_FUNC(other, run_impl);") == ["missing-run"]
    # An export inside a comment does not count.
    assert rules("// TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);\n") == ["missing-run"]


def test_cublas_header_rejected_with_line_quoted():
    src = "#include <cuda.h>\n  #include <cublas_v2.h>\n" + RUN
    (finding,) = check_source(src)
    assert finding.rule == "forbidden-library"
    assert finding.line == 2
    assert finding.text == "#include <cublas_v2.h>"


def test_cudnn_and_cublaslt_headers_rejected():
    assert rules('#include "cudnn.h"\n' + RUN) == ["forbidden-library"]
    assert rules("#include <cublasLt.h>\n" + RUN) == ["forbidden-library"]
    assert rules("# include <cudnn_frontend.h>\n" + RUN) == ["forbidden-library"]


def test_library_calls_and_handles_rejected_without_include():
    src = "void run_impl() {\n  cublasHandle_t h;\n  cublasCreate(&h);\n  cudnnHandle_t d;\n}\n" + RUN
    findings = check_source(src)
    assert [(f.rule, f.line) for f in findings] == [
        ("forbidden-library", 2),
        ("forbidden-library", 3),
        ("forbidden-library", 4),
    ]
    assert findings[1].text == "cublasCreate(&h);"
    assert "cublasCreate" in findings[1].message


def test_dlopen_and_dlsym_rejected():
    src = 'void f() {\n  void* h = dlopen("libx.so", 2);\n  auto g = dlsym(h, "g");\n}\n' + RUN
    assert [(f.rule, f.line) for f in check_source(src)] == [("dynamic-loading", 2), ("dynamic-loading", 3)]


def test_library_names_in_comments_and_strings_are_fine():
    src = (
        "// faster than cuBLAS, no cublasGemmEx here\n"
        "/* cudnnConvolutionForward would be cheating;\n   so would dlopen */\n"
        'const char* msg = "beats cublas and dlsym";\n' + OK
    )
    assert check_source(src) == []


def test_cutlass_and_cute_headers_allowed():
    src = "#include <cutlass/gemm/device/gemm.h>\n#include <cute/tensor.hpp>\n#include <cuda/barrier>\n" + OK
    assert check_source(src) == []


def test_absolute_and_parent_includes_rejected():
    assert rules('#include "/etc/passwd"\n' + RUN) == ["include-path"]
    assert rules("#include <../../secret.h>\n" + RUN) == ["include-path"]
    assert rules('#include "a/../b.h"\n' + RUN) == ["include-path"]
    assert rules("#include MACRO_HEADER\n" + RUN) == ["include-path"]
    # A name that merely contains dots is fine.
    assert rules('#include "my..header.h"\n' + RUN) == []


def test_size_limit_and_encoding():
    big = OK + "//" + "x" * MAX_SOURCE_BYTES
    assert rules(big) == ["size"]
    assert rules(b"\xff\xfe" + OK.encode()) == ["encoding"]
    assert rules(OK + "\x00") == ["encoding"]
    assert check_source(OK.encode()) == []


def test_strip_comments_keeps_lines_and_code():
    src = 'int a = 1; // c1\n/* c2\n c3 */ int b = 2;\nconst char* s = "// not a comment";\nint x = 1\'000;\n'
    out = strip_comments(src)
    assert out.count("\n") == src.count("\n")
    assert "c1" not in out and "c2" not in out and "c3" not in out
    assert '"// not a comment"' in out and "int b = 2;" in out
    blanked = strip_comments(src, blank_strings=True)
    assert "not a comment" not in blanked and "int x = 1'000;" in blanked


def test_raw_string_literals_are_strings():
    src = 'const char* p = R"(cublasCreate dlopen)";\n' + OK
    assert check_source(src) == []
