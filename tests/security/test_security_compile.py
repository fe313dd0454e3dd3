"""No host file reaches the public compile log.

Every preprocessor form that makes the compiler read a named file is refused by the source policy (after line
splicing, comment removal and digraphs, as the preprocessor reads directives); what the policy cannot see is
caught in what nvcc really opened (-MD) or cut from its output; and the compiler's sandbox shows no /etc file
but the loader's cache. The real nvcc runs where the policy alone cannot decide.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from evaluator.build import includes
from evaluator.build.compile import compile_kernel, find_nvcc, tvm_ffi_paths
from evaluator.errors import EnvironmentProblem
from evaluator.isolation.jail import TOOLCHAIN_ETC, open_jail
from evaluator.source_policy.policy import check_preprocessed, check_source

RUN = "\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);\n"
needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="nvcc not installed"
)

# (name, source, line of the finding, a word of its message)
HOSTILE = [
    ("include", '#include "/etc/passwd"\n', 1, "absolute"),
    ("include_next", '#include_next "/etc/passwd"\n', 1, "#include_next"),
    ("include_next_angle", "#include_next <passwd>\n", 1, "#include_next"),
    ("import", '#import "/etc/hostname"\n', 1, "#import"),
    ("embed", '#embed "/etc/passwd"\n', 1, "#embed"),
    ("spliced_name", 'int a;\n#inc\\\nlude "/etc/os-release"\n', 2, "absolute"),
    ("spliced_with_blanks", '#inc\\  \nlude "/etc/os-release"\n', 1, "absolute"),
    ("spliced_hash", '#\\\ninclude_next "/etc/os-release"\n', 1, "#include_next"),
    ("spliced_path", '#include "/etc/pass\\\nwd"\n', 1, "absolute"),
    ("comment_between", '#/**/include "/etc/passwd"\n', 1, "absolute"),
    ("comment_over_lines", 'int a;\n#/*\n*/include_next "/etc/passwd"\n', 2, "#include_next"),
    ("digraph", '%:include "/etc/passwd"\n', 1, "absolute"),
    ("digraph_spaced", "  %:  import <passwd>\n", 1, "#import"),
    ("trigraph", '??=include "/etc/passwd"\n', 1, "trigraph"),
    ("line_file", '#line 1 "/etc/passwd"\n#warning x\n', 1, "#line"),
    ("line_marker", '# 1 "/etc/passwd"\n', 1, "#line"),
    ("pragma_dependency", '#pragma GCC dependency "/etc/passwd"\n', 1, "dependency"),
    ("pragma_tokens", '#define P(x) _Pragma(#x)\nP(GCC dependency "/etc/passwd")\n', 2, "dependency"),
    ("pragma_operator", '_Pragma("GCC dependency \\"/etc/passwd\\"")\n', 1, "dependency"),
    ("has_include_absolute", '#if __has_include("/etc/shadow")\n#endif\n', 1, "absolute"),
    ("has_include_parent", "#if __has_include(<../../etc/shadow>)\n#endif\n", 1, "parent"),
    ("has_include_next", "#if __has_include_next(<x.h>)\n#endif\n", 1, "__has_include_next"),
    ("has_embed", '#if __has_embed("/etc/passwd")\n#endif\n', 1, "__has_embed"),
    ("has_include_macro", '#define H "x"\n#if __has_include(H)\n#endif\n', 2, "macro"),
    ("macro_built_include", "#define H </etc/passwd>\n#include H\n", 2, "macro"),
    ("device_zero", '#include "/dev/zero"\n', 1, "device"),
    ("device_stdin", "#include </dev/stdin>\n", 1, "device"),
    ("proc_self", '#include "/proc/self/environ"\n', 1, "device"),
    ("asm_include", 'asm(".include \\"/etc/passwd\\"");\n', 1, "assembler"),
    ("asm_incbin", 'asm(".incbin \\"/etc/passwd\\"");\n', 1, "assembler"),
]


@pytest.mark.parametrize(("source", "line", "word"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_every_file_reading_form_is_rejected_before_compiling(source, line, word):
    findings = [f for f in check_source(source + RUN) if f.rule == "include-path"]
    assert findings, source
    assert findings[0].line == line
    assert word in findings[0].message


def test_legitimate_directives_pass():
    source = (
        "#include <tvm/ffi/function.h>\n"
        "#if __has_include(<cuda/barrier>)\n#include <cuda/barrier>\n#endif\n"
        '#line 40\n#pragma unroll\n#pragma once\n_Pragma("unroll 4")\n'
        "#define LONG_MACRO(x) \\\n  (x + 1)\n"
        'const char* s = R"(#include "/etc/passwd")"; // #include_next "/etc/passwd"\n'
        "/* #import <x> */ int n = 1'000;\nvoid run_impl() {}\n" + RUN
    )
    assert check_source(source) == []


def test_findings_name_the_first_physical_line_of_a_spliced_directive():
    lines = includes.translated_lines('a\n#inc\\\nlude "x"\nb /* one\ntwo */ c\nd\n')
    assert [(n, text) for n, text, _ in lines] == [(1, "a"), (2, '#include "x"'), (4, "b   c"), (6, "d"), (7, "")]


def test_literals_are_blanked_as_the_directive_reader_reads_them():
    # A raw string hides the directive-looking line inside it; an escaped quote, a character literal and a digit
    # separator end nothing early; `fooR"` is an identifier and an ordinary literal; an unterminated one ends
    # with its line.
    source = 'x = R"d(a\n#include "q")d"; y\ns = "a\\"b" + \'c\' + 1\'000;\nfooR"z" "open\n# define Z // c\n'
    assert includes.translated_lines(source) == [
        (1, 'x = R"d(a', "x =      "),
        (2, '#include "q")d"; y', "               ; y"),
        (3, "s = \"a\\\"b\" + 'c' + 1'000;", "s = \"    \" + ' ' + 1'000;"),
        (4, 'fooR"z" "open', 'fooR" " "    '),
        (5, "# define Z  ", "# define Z  "),
        (6, "", ""),
    ]


def test_after_macro_expansion_pragma_and_joined_assembler_strings_are_found():
    # What `nvcc -E` makes of `#define P(x) _Pragma(#x)` + `P(GCC dependency "/etc/passwd")`, and of
    # asm(".inc" "bin \"/etc/passwd\"") split over lines, in the candidate's own lines.
    text = (
        '# 1 "/build/kernel.cu"\n'
        '#pragma GCC dependency "/etc/passwd"\n'
        'asm(".inc"\n'
        ' "bin \\"/etc/passwd\\"");\n'
        '# 1 "/usr/include/stdio.h"\n'
        'asm(".include \\"/usr/x\\"");\n'
    )
    findings = check_preprocessed(text)
    assert [(f.rule, f.line) for f in findings] == [("include-path", 1), ("include-path", 2)]
    assert "dependency" in findings[0].message and "assembler" in findings[1].message


def test_dependency_file_parsing():
    text = "kernel.so : kernel.cu \\\n    /usr/include/stdio.h \\\n    /etc/my\\ file.h /tmp/a$$b.h\n"
    assert includes.parse_dependencies(text) == [
        "kernel.cu",
        "/usr/include/stdio.h",
        "/etc/my file.h",
        "/tmp/a$b.h",
    ]


def test_outside_roots_follows_links_out_of_a_root(tmp_path):
    root, build, secret = tmp_path / "root", tmp_path / "build", tmp_path / "secret.h"
    root.mkdir()
    build.mkdir()
    secret.write_text("x")
    (root / "ok.h").write_text("")
    (root / "link.h").symlink_to(secret)
    deps = ["kernel.cu", str(root / "ok.h"), str(root / "link.h"), str(secret), "../secret.h"]
    assert includes.outside_roots(deps, [root, build], build) == [str(root / "link.h"), str(secret), "../secret.h"]


def test_redaction_cuts_diagnostics_located_in_or_naming_outside_files(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    roots = [Path("/usr/include")]
    output = "\n".join(
        [
            f'{build}/kernel.cu(3): error: identifier "x" is undefined',
            "    int y = x;",
            "            ^",
            '/etc/passwd(1): error: identifier "root" is undefined',
            "  root:x:0:0:root:/root:/bin/bash",
            "  ^",
            "/etc/passwd:1:2: warning: #warning hi [-Wcpp]",
            "    1 | root:x:0:0:root:/root:/bin/bash",
            "      |  ^~~~~~~",
            "/etc/passwd: Assembler messages:",
            "/etc/passwd:1: Error: no such instruction: `root:x:0:0:root:/root:/bin/bash'",
            "../../etc/hostname:1:1: error: stray",
            "In file included from /etc/secret.h:1,",
            f"                 from {build}/kernel.cu:1:",
            f"{build}/kernel.cu:1:24: warning: current file is older than /etc/passwd",
            "/usr/include/stdio.h:12: note: fine",
            "ptxas /tmp/tmpxft_0000291a_00000000-6_kernel.ptx, line 5; error   : bad",
            "/usr/bin/ld: cannot find -lfoo",
            '1 error detected in the compilation of "kernel.cu".',
        ]
    )
    text, cut = includes.redact_output(output, includes.quotable_roots(roots, None), build)
    assert "root:x" not in text and "/etc/" not in text and "hostname" not in text
    assert cut == 11
    for kept in ("kernel.cu(3)", "int y = x;", "stdio.h:12", "tmpxft_", "/usr/bin/ld", "1 error detected"):
        assert kept in text
    assert text.endswith("11 line(s) naming or quoting files outside the allowed include roots cut")


def test_include_roots_are_the_compilers_search_list():
    try:
        nvcc = find_nvcc()
        tvm_includes, _ = tvm_ffi_paths()
    except EnvironmentProblem as exc:
        pytest.skip(str(exc))
    roots = includes.include_roots(nvcc, tvm_includes)
    assert Path(os.path.realpath("/usr/include")) in roots
    assert Path(os.path.realpath(tvm_includes[0])) in roots
    assert any((r / "cuda_runtime.h").is_file() for r in roots)
    assert not any(r == Path("/etc") or Path("/etc") in r.parents for r in roots)


# --------------------------------------------------------------------------- with the real nvcc


@needs_nvcc
def test_a_file_nvcc_opened_outside_the_roots_withholds_the_log(tmp_path):
    # The policy is bypassed (compile_kernel alone) and no sandbox hides the file: the dependency check must.
    secret = tmp_path / "host_secret.txt"
    secret.write_text("SECRET_LINE_ONE\nSECRET_LINE_TWO\n")
    compiled = compile_kernel(f'#include_next "{secret}"\n', "sm_90a", tmp_path / "build", jail=None)
    assert compiled.outside_files == [str(secret)]
    assert not compiled.result.ok
    assert compiled.result.output == includes.WITHHELD
    assert "SECRET_LINE" not in compiled.result.output


@needs_nvcc
def test_a_line_directive_naming_a_host_file_never_quotes_it(tmp_path):
    # GCC prints the named file's line under a diagnostic: "#line 1 FILE" + "#warning" would quote FILE.
    secret = tmp_path / "host_secret.txt"
    secret.write_text("SECRET_LINE_ONE\n")
    source = f'#line 1 "{secret}"\n#warning hi\n'
    assert any(f.rule == "include-path" for f in check_source(source + RUN))
    compiled = compile_kernel(source, "sm_90a", tmp_path / "build", jail=None)
    assert "SECRET_LINE" not in compiled.result.output
    assert str(secret) not in compiled.result.output


def test_compile_sandbox_shows_the_toolchain_alone(tmp_path):
    try:
        jail = open_jail(allow_unsandboxed=False)
    except EnvironmentProblem as exc:
        pytest.skip(f"no sandbox here: {exc}")
    probe = (
        "for p in /etc/passwd /etc/hostname /etc/os-release /etc/ptxbench.env /opt /sys/class /home /root /var; do "
        '[ -e "$p" ] && echo "VISIBLE $p"; done; '
        '[ -e /etc/ld.so.cache ] && echo "cache ok"; ls /dev | tr "\\n" " "; true'
    )
    argv = jail.command(["/bin/sh", "-c", probe], readable=[tmp_path], toolchain=True)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    assert "VISIBLE" not in out, out
    assert "cache ok" in out or "/etc/ld.so.cache" not in TOOLCHAIN_ETC or not Path("/etc/ld.so.cache").exists()
    devices = set(out.split("cache ok")[-1].split())
    assert devices <= {"console", "core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm"} | {
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
    }
    assert not any(d.startswith("nvidia") for d in devices)


@needs_nvcc
def test_pipeline_rejects_a_header_that_leads_outside_the_roots_and_publishes_nothing_of_it(tmp_path):
    # A relative include the policy allows, through a link in the build folder to a file the compile sandbox
    # shows (under /usr, outside every include root): only the -MD check can see where it led.
    from evaluator.both_sides.taskdata import find_task
    from evaluator.both_sides.verdict import to_json
    from evaluator.pipeline import Options, evaluate

    target = Path("/usr/lib/os-release")
    if not target.is_file():
        pytest.skip("no /usr/lib/os-release on this host")
    repo = Path(__file__).resolve().parents[2]
    task = find_task(repo / "tests" / "evaluator" / "tasks", "tiny_gemm")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "leak.h").symlink_to(target)
    source = (repo / "tests" / "adversarial" / "include_passwd.cu").read_text().replace('"/etc/passwd"', '"leak.h"')
    assert check_source(source) == []
    verdict = evaluate(
        source,
        task,
        "sm_90a",
        workloads="00000000-0000-4000-8000-000000000016",
        stages=["compile"],
        options=Options(device_type="cpu", workdir=tmp_path),
    )
    assert verdict.status.value == "POLICY_REJECTED"
    assert "outside the allowed include roots" in verdict.policy[0].message
    assert "leak.h" in verdict.policy[0].message
    assert verdict.compile.output == includes.WITHHELD
    published = to_json(verdict)
    assert "PRETTY_NAME" not in published and "os-release" not in published
