"""The assembler-directive rule reads string literals as the compiler decodes them and statements as
gas splits them (evaluator/source_policy/asm_strings.py, applied by evaluator/source_policy/policy.py).

The old rule looked for `.include`/`.incbin` after a blank, `;` or `"` in the undecoded source text; every form
of the issue got past it and made gas read a file. The real nvcc shows each form is live (the file's bytes end up
in the library); the policy refuses each before compiling, and the macro-built ones in the preprocessed passes
the real compile keeps.
Honest PTX (every reference kernel, starter and test kernel) passes.
"""

from __future__ import annotations

import glob
import shutil
import time
from pathlib import Path

import pytest

from evaluator.build.compile import compile_kernel
from evaluator.source_policy import asm_strings
from evaluator.source_policy.policy import check_preprocessed, check_source, own_lines

REPO = Path(__file__).resolve().parents[2]
RUN = "\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);\n"
ASM_RULES = {"include-path", "assembler-directive"}
needs_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="nvcc not installed"
)

# The issue's forms, `{inc}` an assembler file and `{bin}` any file: (name, source line, word of the message).
ISSUE_FORMS = [
    ("tab_include", 'asm("\\t.include \\"{inc}\\"");', "assembler .include"),
    ("newline_include", 'asm("nop\\n.include \\"{inc}\\"");', "assembler .include"),
    ("octal_include", 'asm("\\056include \\"{inc}\\"");', "assembler .include"),
    ("hex_include", 'asm("\\x2einclude \\"{inc}\\"");', "assembler .include"),
    ("label_include", 'asm("lbl_{name}:.include \\"{inc}\\"");', "assembler .include"),
    ("irp_include", 'asm(".irp d,include\\n.\\\\d \\"{inc}\\"\\n.endr");', "assembler .irp"),
    ("tab_incbin", 'asm("\\t.incbin \\"{bin}\\"");', "assembler .incbin"),
]

# More forms gas or GCC accept (checked by hand with gcc 12 / binutils 2.40 / nvcc 13.0): (name, source, word).
MORE_FORMS = [
    ("semicolon", 'asm("nop; .incbin \\"/etc/passwd\\"");', ".incbin"),
    ("two_labels", 'asm("a: 1: .incbin \\"/etc/passwd\\"");', ".incbin"),
    ("quoted_label", 'asm("\\"x y\\": .incbin \\"/etc/passwd\\"");', ".incbin"),
    ("carriage_return_blank", 'asm("\\r.incbin \\"/etc/passwd\\"");', ".incbin"),
    ("form_feed_blank", 'asm("\\f.incbin \\"/etc/passwd\\"");', ".incbin"),
    ("upper_case", 'asm(".INCBIN \\"/etc/passwd\\"");', ".incbin"),
    ("block_comment_inside_name", 'asm(".inc/**/bin \\"/etc/passwd\\"");', ".incbin"),
    ("hex_out_of_range_masked", 'asm("\\x12eincbin \\"/etc/passwd\\"");', ".incbin"),
    ("octal_out_of_range_masked", 'asm("\\456incbin \\"/etc/passwd\\"");', ".incbin"),
    ("hex_leading_zeros", 'asm("\\x00002eincbin \\"/etc/passwd\\"");', ".incbin"),
    ("ucn_short", 'asm("\\u002eincbin \\"/etc/passwd\\"");', ".incbin"),
    ("ucn_long", 'asm("\\U0000002eincbin \\"/etc/passwd\\"");', ".incbin"),
    ("delimited_octal", 'asm("\\o{56}incbin \\"/etc/passwd\\"");', ".incbin"),
    ("raw_u8", 'asm(u8R"(.incbin "/etc/passwd")");', ".incbin"),
    ("raw_delimited", 'asm(R"x(\n  .incbin "/etc/passwd")x");', ".incbin"),
    ("adjacent_literals", 'asm(".inc"\n    "bin \\"/etc/passwd\\"");', ".incbin"),
    ("adjacent_across_directive", 'asm(".inc"\n#define NOTHING\n"bin \\"/etc/passwd\\"");', ".incbin"),
    ("rep_built", 'asm(".rep 1\\n.incbin \\"/etc/passwd\\"\\n.endr");', ".rep"),
    ("irep_pasted", 'asm(".irep d,inc\\n.\\\\d\\\\()bin \\"/etc/passwd\\"\\n.endr");', ".irep"),
    ("macro_built", 'asm(".macro m a\\n.\\\\a \\"/etc/passwd\\"\\n.endm\\nm incb\\\\()in");', ".macro"),
    ("altmacro_built", 'asm(".altmacro\\n.macro m a\\n.inc&a x\\n.endm");', ".altmacro"),
    ("mri_mode", 'asm(".mri 1");', ".mri"),
    # gas's scrubber: `'"` is a character constant and `#` starts a comment, so the `/*` in the string is text and
    # `.inc/**/bin` is `.incbin`; the keyword hidden by a macro leaves the raw check no asm context.
    (
        "hidden_asm_char_constant",
        '#define A asm\nA(".byte \'\\"\\n.ascii \\"/*\\"\\n.inc/**/bin \\"/etc/passwd\\"");',
        ".incbin",
    ),
    (
        "hidden_asm_hash_comment",
        '#define A asm\nA(".ascii \\"/*\\"\\n# \\"\\n.inc/**/bin \\"/etc/passwd\\"");',
        ".incbin",
    ),
    ("section_attribute", '__attribute__((section(".text\\n.incbin \\"/etc/passwd\\"\\n#"))) int f;', ".incbin"),
    ("ident_line", '#ident "x\\"\\n.incbin \\"/etc/passwd\\"\\n#"', ".incbin"),
    ("label_names_loader", 'int f() asm("dlopen");', "run-time loader"),
    ("call_through_asm", 'void g() { asm("call dlopen@PLT"); }', "run-time loader"),
    ("weakref_attribute", 'static void* h(const char*, int) __attribute__((weakref("dlopen")));', "run-time loader"),
    ("computed_asm_string", 'asm((".inc" "bin"));', "computed string"),
]


def _issue_source(tmp: Path) -> tuple[str, dict[str, bytes]]:
    """One source with every issue form, each pointed at its own marker file; the markers gas would copy."""
    lines, markers = [], {}
    for i, (name, form, _) in enumerate(ISSUE_FORMS):
        marker = f"READ-BY-GAS-{i}-{name[::-1]}"
        (tmp / f"{name}.s").write_text(f'.ascii "{marker}"\n')
        (tmp / f"{name}.dat").write_text(marker)
        line = form.replace("{inc}", str(tmp / f"{name}.s")).replace("{bin}", str(tmp / f"{name}.dat"))
        lines.append(line.replace("{name}", name))
        markers[name] = marker.encode()
    return "\n".join(lines) + "\n", markers


@needs_nvcc
def test_the_issue_forms_make_the_real_assembler_read_files_and_the_policy_refuses_each(tmp_path):
    """Without the policy nvcc compiles every issue form and gas copies the named file into the library (the
    forms are live, so refusing them is the point); with it, each is refused before compiling, on its line.
    Mutation caught: the old regex over undecoded text (`(^|[\\s;"])\\.(incbin|include)`) passed all seven."""
    source, markers = _issue_source(tmp_path)
    compiled = compile_kernel(source, "sm_90a", tmp_path / "build", jail=None, cache_dir=tmp_path / "cache")
    assert compiled.result.ok, compiled.result.output
    library = Path(compiled.library).read_bytes()
    assert [name for name, marker in markers.items() if marker not in library] == []

    for line_no, (name, _form, word) in enumerate(ISSUE_FORMS, start=1):
        found = [f for f in check_source(source + RUN) if f.rule in ASM_RULES and f.line == line_no]
        assert found, name
        assert any(word in f.message for f in found), (name, [f.message for f in found])


@pytest.mark.parametrize(("source", "word"), [f[1:] for f in MORE_FORMS], ids=[f[0] for f in MORE_FORMS])
def test_more_forms_are_refused_before_compiling(source, word):
    """Each form makes gas read a file, build a directive, or bind a loader symbol (see MORE_FORMS). Mutation
    caught: dropping any decoding step, statement split, block-comment view or assembler context lets one pass."""
    findings = [f for f in check_source(source + "\nvoid run_impl() {}" + RUN) if f.line == 1 or "\n" in source]
    assert any(word in f.message for f in findings), [f.message for f in findings]


def test_findings_show_the_decoded_statement_and_the_source_line():
    """The message says which directive and shows the text as the compiler decoded it; the quote is the line."""
    source = 'int a;\nasm("nop\\n\\056incbin \\"/etc/passwd\\"");\n' + RUN
    (finding,) = [f for f in check_source(source) if f.rule == "include-path"]
    assert finding.line == 2
    assert finding.message.startswith("assembler .incbin is not allowed (it copies a file into the object)")
    assert "'.incbin \"/etc/passwd\"'" in finding.message
    assert finding.text == 'asm("nop\\n\\056incbin \\"/etc/passwd\\"");'


# --------------------------------------------------------------------------- decoding and splitting


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ('"\\056\\x2e\\u002e"', "..."),
        ('"\\x12e\\456"', ".."),  # masked to 8 bits, as GCC and nvcc compile them
        ('"\\n\\t\\\\\\"\\?\\e\\q"', '\n\t\\"?\x1bq'),  # an unknown escape keeps its character
        ('"\\u00e9"', "\xc3\xa9"),  # a UCN becomes its UTF-8 bytes
        ('u8"\\U0001F600"', "\xf0\x9f\x98\x80"),
        ('L"\\x2e\\u00e9"', ".\xe9"),  # wide: code units
        ('R"d(a\\n"b)d"', 'a\\n"b'),  # raw: no escapes
        ('"\\o{56}\\x{2e}\\N{FULL STOP}"', "..."),
        ('"\\1\\12"', "\x01\n"),
    ],
)
def test_decode_literal_reads_escapes_as_the_compiler_does(token, value):
    """Mutation caught: a decoder that skips masking, UCN encoding, raw strings or delimited escapes."""
    assert asm_strings.decode_literal(token) == value


def test_delimited_escapes_are_also_read_as_an_older_front_end_reads_them():
    """nvcc 13's front end reads `\\o{56}` as `o{56}`; GCC 13 as `.`: both readings are checked."""
    assert asm_strings.decode_literal('"\\o{56}x"', delimited=False) == "o{56}x"


def test_gas_statements_split_as_gas_does():
    """Mutation caught: not cutting at `;` or newline, or keeping a label in front of the directive."""
    text = 'nop; x: 1: "q r": .incbin "a"\n\t.include "b"'
    assert asm_strings.gas_statements(text) == ["nop", '.incbin "a"', '.include "b"']


def test_literals_are_joined_and_assembler_contexts_found():
    groups, computed = asm_strings.source_groups(
        'f("a" "b");\nasm volatile(".x"\n ".y" : : "r"(v));\n__attribute__((section("s"))) int q;\nasm(("z"));'
    )
    assert [(g.tokens, g.lines, g.assembler) for g in groups] == [
        (('"a"', '"b"'), (1, 1), False),
        (('".x"', '".y"'), (2, 3), True),
        (('"r"',), (3,), True),
        (('"s"',), (4,), True),
        (('"z"',), (5,), True),
    ]
    assert computed == [5]


# --------------------------------------------------------------------------- after macro expansion


MACRO_FORMS = [
    ("pasted", '#define CAT(a, b) a b\nasm(CAT(".inc", "bin \\"/etc/passwd\\""));\n', ".incbin"),
    ("stringized", '#define S(x) #x\nasm(S(.incbin "/etc/passwd"));\n', ".incbin"),
    ("escaped_dot_in_macro", '#define DOT(x) "\\056" #x\nasm(DOT(incbin) " \\"/etc/passwd\\"");\n', ".incbin"),
    ("hidden_keyword", "#define A asm\n#define S(...) #__VA_ARGS__\nA(S(nop; .irp d,include));\n", ".irp"),
]


def _preprocessed(source: str, folder: Path) -> str:
    """The preprocessed passes a real compile of `source` keeps (failed or not): the policy's text after expansion."""
    compiled = compile_kernel(source, "sm_90a", folder, cache_dir=None)
    assert compiled.preprocessed is not None and compiled.unchecked is None, compiled.result.output
    return compiled.preprocessed


@needs_nvcc
@pytest.mark.parametrize(("source", "word"), [f[1:] for f in MACRO_FORMS], ids=[f[0] for f in MACRO_FORMS])
def test_macro_built_forms_are_refused_in_the_real_preprocessor_output(tmp_path, source, word):
    """The raw source shows no directive; the preprocessed passes do, on the candidate's own line. Mutation caught:
    the old joined-literal check saw `.incbin` only after a blank or quote, never a stringized or escaped one or
    `.irp`."""
    source += "void run_impl() {}\n" + RUN
    assert not [f for f in check_source(source) if f.rule in ASM_RULES], "the raw source check alone sees it"
    text = _preprocessed(source, tmp_path)
    findings = [f for f in check_preprocessed(text) if f.rule in ASM_RULES]
    assert any(word in f.message and "after macro expansion" in f.message for f in findings), findings
    assert findings[0].line == source[: source.index("asm(" if "asm(" in source else "A(")].count("\n") + 1


@needs_nvcc
def test_a_marker_line_inside_a_raw_string_does_not_hide_the_lines_after_it(tmp_path):
    """gcc -E copies a raw string verbatim, so a line in it can look like a line marker naming a system header;
    the candidate's later lines must still be read as its own. Mutation caught: own lines found by markers
    alone (the old loop), which skipped the pasted `.incbin` and any pasted dlopen after the fake marker."""
    source = (
        'const char* fake = R"(\n# 1 "/usr/include/stdio.h" 1\n)";\n'
        '#define CAT(a, b) a b\nasm(CAT(".inc", "bin \\"/etc/passwd\\""));\n'
    )
    text = _preprocessed(source, tmp_path)
    assert any(line.startswith('# 1 "/usr/include/stdio.h" 1') for line in text.splitlines())
    assert {n for n, t in own_lines(text) if "asm(" in t} == {5}  # in each pass
    assert any(f.line == 5 and ".incbin" in f.message for f in check_preprocessed(text))


# --------------------------------------------------------------------------- honest PTX


HONEST_PTX = [
    'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" ::"r"(a), "r"(b));',
    'asm volatile("{\\n.reg .pred done;\\nWAIT_%=:\\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\\n'
    '@!done bra WAIT_%=;\\n}\\n" ::"r"(a), "r"(b) : "memory");',
    'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}],'
    ' [%2];\\n" ::"r"(a), "l"(m), "r"(b), "r"(c), "r"(d) : "memory");',
    'asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1}, %2, %3, 1, 1, 1, 0, 0;\\n"'
    ' : "+f"(x), "+f"(y) : "l"(da), "l"(db));',
    'asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");',
    'asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %0, 0;\\n@p bra.uni DONE;\\nDONE:\\n}\\n" :: "r"(v));',
    'asm volatile("prefetch.tensormap [%0];" :: "l"(m) : "memory");',
    'const char* note = "this kernel includes a bias"; printf("%d.%d\\n", 1, 2);',
]


@pytest.mark.parametrize("snippet", HONEST_PTX)
def test_honest_ptx_passes(snippet):
    """Mutation caught: a rule that refuses PTX directives (`.reg`, `.pred`), `::` state spaces, `%=` labels,
    `@p bra`, or a plain message that mentions including something."""
    assert [f for f in check_source(snippet + "\nvoid run_impl() {}" + RUN) if f.rule in ASM_RULES] == []


REFERENCE_SOURCES = sorted(
    glob.glob(str(REPO / "tasks/*/solutions/*/*.cu"))
    + glob.glob(str(REPO / "tasks/*/starter.cu"))
    + glob.glob(str(REPO / "tests/kernels/*.cu"))
)


def test_every_reference_kernel_starter_and_test_kernel_passes_the_raw_check():
    assert len(REFERENCE_SOURCES) >= 20
    for path in REFERENCE_SOURCES:
        found = [f for f in check_source(Path(path).read_text()) if f.rule in ASM_RULES or "assembler" in f.message]
        assert found == [], path


# The reference kernels with inline PTX (wgmma, tcgen05, TMA, mbarrier) passing the policy after macro expansion,
# on the passes their real compile keeps: tests/tasks/test_reference_solutions.py compiles each for its own
# architecture through the compile stage, where a finding would make it POLICY_REJECTED, not STATIC_ONLY.


def test_a_hash_from_a_macro_expansion_is_code_not_a_directive_line():
    """gcc -E prints a `#` token that a macro expansion put at the start of a line after a blank; that line is
    code the compiler reads (`[[x(# 1 "f")]] asm(...)`), so the check must not skip it as a line marker or
    directive. Mutation caught: reading `nvcc -E` output with the source text's directive rule (`^\\s*#`)."""
    text = (
        '# 1 "/build/kernel.cu"\n'
        "[[x(\n"
        ' # 1 "f" )]] asm(".inc" "bin \\"/etc/passwd\\"");\n'
        '#pragma ident "a\\"\\n.incbin \\"/etc/passwd\\"\\n#"\n'
    )
    found = [(f.line, f.message.split(" (")[0]) for f in check_preprocessed(text) if f.rule in ASM_RULES]
    assert found == [(2, "assembler .incbin is not allowed"), (3, "assembler .incbin is not allowed")]


@pytest.mark.parametrize(
    "source",
    [
        'R"(' * 250_000,  # raw-string openers with no terminator
        'asm("' + "a" * 1_000_000 + '");',  # one long label-less statement
        'asm("' + ".include " * 100_000 + '");',  # one directive, repeated
    ],
    ids=["raw_openers", "long_statement", "repeated_directive"],
)
def test_the_rule_stays_linear_on_a_hostile_mebibyte(source):
    """The policy runs in the trusted parent before anything is sandboxed: 1 MiB of source must not stall it.
    Measured 1.4-2.8 s each on the loaded 2-core CI box; a quadratic scan takes hours. Mutation caught: a
    lazy `R"(.*?)"` token regex, a backtracking label pattern, or computing every repeated hit's excerpt."""
    started = time.monotonic()
    check_source(source + RUN)
    assert time.monotonic() - started < 60
