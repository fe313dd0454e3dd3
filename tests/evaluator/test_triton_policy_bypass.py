"""The Triton policy against known reaches: every route from an allowed module to Python's builtins, a
loader or another module is refused, wherever the code sits (host function, top level, decorator, default,
annotation, lambda, class body, comprehension, f-string, match, kernel body).

Each case passed the old policy, which admitted every name under `triton.language` (the mutation it catches:
"the kernel language is allowed whole"; tests/evaluator/test_triton_policy_walk.py tests the table itself).
"""

from __future__ import annotations

import pytest

from evaluator.source_policy.triton_policy import check_source
from tests.support.factories import REPO

IMPORTS = "import torch\nimport triton\nimport triton.language as tl\n"
KERNEL = (
    "\n\n@triton.jit\ndef k(x_ptr, N: tl.constexpr):\n"
    "    {kernel}\n"
    "    tl.store(x_ptr + tl.arange(0, N), tl.zeros((N,), tl.float32))\n"
)
RUN = "\n\ndef run(A, B, C):\n    {host}\n    k[(1,)](C, N=16)\n"


def source(*, top: str = "", kernel: str = "pass", host: str = "pass") -> str:
    """A small honest file with one snippet placed at top level, in the kernel body or in `run`."""
    return IMPORTS + top + "\n" + KERNEL.format(kernel=kernel) + RUN.format(host=host)


BYPASSES = [
    # (id, where, snippet, rule, substring of the message)
    ("builtins-eval", "host", "tl.core.builtins.eval('1')", "module-attribute", "'triton.language.core'"),
    ("builtins-exec", "host", "tl.core.builtins.exec('import os')", "module-attribute", "'triton.language.core'"),
    ("inspect-os", "host", "tl.core.inspect.os.system('id')", "module-attribute", "the module 'triton.language.core'"),
    ("pkgutil", "host", "m = tl.extra.pkgutil.importlib", "module-attribute", "'triton.language.extra.pkgutil'"),
    ("typing-sys", "host", "s = tl.core.typing.sys", "module-attribute", "'triton.language.core'"),
    ("via-triton", "host", "triton.language.core.builtins.exec('1')", "module-attribute", "language.core"),
    ("math-core", "host", "tl.math.core.builtins", "module-attribute", "'triton.language.math.core'"),
    ("math-wraps", "host", "tl.math.wraps", "module-attribute", "the function 'functools.wraps'"),
    ("extra-spec", "host", "tl.extra.module_from_spec", "module-attribute", "loader"),
    ("from-builtins", "top", "from triton.language.core import builtins", "import", "triton.language.core"),
    ("from-core", "top", "from triton.language import core", "import", "'triton.language.core'"),
    ("import-core", "top", "import triton.language.core as c", "import", "'triton.language.core'"),
    ("from-extra-pkgutil", "top", "from triton.language.extra import pkgutil", "import", "pkgutil"),
    (
        "decorator",
        "top",
        "@tl.core.builtins.eval\ndef helper():\n    pass",
        "module-attribute",
        "'triton.language.core'",
    ),
    ("lambda-default", "top", "f = lambda x=tl.core.builtins.exec('1'): x", "module-attribute", "language.core"),
    (
        "default-argument",
        "top",
        "def helper(x=tl.core.inspect.os.system('id')):\n    pass",
        "module-attribute",
        "language.core",
    ),
    (
        "return-annotation",
        "top",
        "def helper() -> tl.core.builtins.exec('1'):\n    pass",
        "module-attribute",
        "language.core",
    ),
    ("class-body", "top", "class C:\n    x = tl.core.builtins.eval('1')", "module-attribute", "language.core"),
    ("comprehension", "host", "[tl.core.builtins.eval(s) for s in '1']", "module-attribute", "language.core"),
    ("f-string", "host", "f'{tl.core.builtins.eval(\"1\")}'", "module-attribute", "language.core"),
    (
        "match-class",
        "host",
        "match A:\n        case tl.core.builtins.object():\n            pass",
        "module-attribute",
        "language.core",
    ),
    ("match-capture", "host", "match A:\n        case tl:\n            pass", "module-alias", "rebinds"),
    ("argument-rebinds", "top", "def helper(tl=tl.sum):\n    return tl.fn", "module-alias", "rebinds"),
    ("except-rebinds", "host", "try:\n        pass\n    except Exception as tl:\n        pass", "module-alias", "'tl'"),
    ("import-rebinds", "top", "import math as tl", "module-alias", "rebinds the module name 'tl'"),
    ("from-import-rebinds", "top", "from triton.language import sum as tl", "module-alias", "rebinds"),
    ("def-rebinds", "top", "def tl():\n    pass", "module-alias", "rebinds"),
    ("module-as-value", "host", "m = tl.extra", "module-alias", "'triton.language.extra' as a value"),
    ("kernel-builtins", "kernel", "tl.core.builtins.exec('import os')", "module-attribute", "language.core"),
    ("kernel-inspect", "kernel", "tl.core.inspect.os.system('id')", "module-attribute", "language.core"),
    ("kernel-globals", "kernel", "g = tl.sum.used_global_vals", "kernel-attribute", "used_global_vals"),
    ("kernel-fn", "kernel", "f = tl.sum\n    g = f.fn", "kernel-attribute", "'.fn'"),
    ("kernel-ifexp", "kernel", "p = (tl.extra if N else tl.math).pkgutil", "module-alias", "as a value"),
    ("kernel-subscript", "kernel", "c = [tl.math][0].core", "module-alias", "as a value"),
    ("kernel-type", "kernel", "t = type(tl.float32)", "dynamic-code", "'type'"),
]  # fmt: skip


def _placed(where: str, snippet: str) -> str:
    if where == "kernel":
        return source(kernel=snippet)
    if where == "host":
        return source(host=snippet)
    return source(top=snippet)


@pytest.mark.parametrize(("where", "snippet", "rule", "words"), [b[1:] for b in BYPASSES], ids=[b[0] for b in BYPASSES])
def test_each_reach_is_refused_where_it_sits(where: str, snippet: str, rule: str, words: str):
    src = _placed(where, snippet)
    findings = check_source(src, ["A", "B", "C"])
    hits = [f for f in findings if f.rule == rule and words in f.message]
    assert hits, findings
    first = snippet.splitlines()[0].strip()
    assert any(first in f.text or f.text in snippet for f in hits), hits


def test_the_files_without_their_snippet_pass():
    """The frame is honest: what refuses each case above is its snippet, not the file around it."""
    assert check_source(source(), ["A", "B", "C"]) == []


HONEST = sorted(
    [
        *REPO.glob("tasks/*/solutions/*/*.py"),
        *REPO.glob("tasks/*/starter_triton.py"),
        REPO / "tests/kernels/triton_dead_dot.py",
        REPO / "tests/adversarial/triton_skip_after_trials.py",
    ]
)


@pytest.mark.parametrize("path", HONEST, ids=[str(p.relative_to(REPO)) for p in HONEST])
def test_every_honest_triton_file_still_passes(path):
    """The allowlist admits what real kernels use (tl.math, descriptors, `.to`, `.dtype.element_ty`, `.T`)."""
    assert check_source(path.read_text()) == []


def test_honest_kernel_language_reaches_pass():
    """What a kernel legitimately names: libdevice, the math namespace, value attributes, descriptors."""
    kernel = (
        "y = tl.extra.cuda.libdevice.exp(tl.math.exp2(tl.zeros((N,), tl.float32)))\n"
        "    z = y.to(x_ptr.dtype.element_ty).reshape((N,)).T\n"
        "    d = tl.make_tensor_descriptor(x_ptr, [N], [1], [N])\n"
        "    w = d.load([0]) + tl.full((N,), 1, tl.float32).sum(0)"
    )
    top = "import math\nimport triton.language.extra.cuda.libdevice as libdevice\nfrom triton.language import math as tmath\n"
    assert check_source(source(top=top, kernel=kernel, host="s = math.sqrt(A.shape[0])"), ["A", "B", "C"]) == []


@pytest.mark.parametrize(
    "snippet",
    ["t = tl\n    t.core.builtins.eval('1')", "t = triton.language", "(t := tl)", "for tl in [0]:\n        pass"],
)
def test_a_module_bound_to_another_name_stays_refused(snippet: str):
    """Aliases were refused before too (rule module-alias); kept here so the new chain walk cannot lose them."""
    findings = check_source(source(host=snippet), ["A", "B", "C"])
    assert any(f.rule == "module-alias" for f in findings), findings


def test_importing_a_module_again_under_its_own_name_is_no_rebinding():
    """Catches a rebinding rule that refuses an honest duplicate import (the same module under the same name)."""
    assert (
        check_source(source(top="import triton.language as tl\nfrom triton.language import math"), ["A", "B", "C"])
        == []
    )


# What Python and Triton look up by themselves. Each snippet passed the policy before: a special name bound by
# a form other than a plain assignment, or `__name__` assigned (only reading it was meant to be allowed).
SPECIAL_BINDINGS = [
    # (id, where, snippet)
    ("module-name", "top", "__name__ = 'triton.language.extra.libdevice'"),
    ("class-name", "top", "class C:\n    __name__ = '__builtins__'"),
    ("def-name", "top", "class C:\n    def __triton_builtin__(self):\n        pass"),
    ("decorated-def", "top", "class C:\n    @(lambda f: ('matmul',))\n    def __match_args__(self):\n        pass"),
    ("module-getattr", "top", "def __getattr__(name):\n    return name"),
    ("class-def", "top", "class C:\n    class __match_args__:\n        pass"),
    ("import-alias", "top", "class C:\n    from math import pi as __triton_builtin__"),
    ("argument", "top", "def helper(__module__=1):\n    return 0"),
    ("except-name", "host", "try:\n        pass\n    except Exception as __name__:\n        pass"),
    ("match-capture", "host", "match A:\n        case __name__:\n            pass"),
    ("global", "host", "global __name__"),
    ("walrus", "host", "(__name__ := 'x')"),
    ("for-target", "host", "for __name__ in 'x':\n        pass"),
    ("del", "top", "del __name__"),
]  # fmt: skip


@pytest.mark.parametrize(("where", "snippet"), [b[1:] for b in SPECIAL_BINDINGS], ids=[b[0] for b in SPECIAL_BINDINGS])
def test_a_special_name_is_never_bound(where: str, snippet: str):
    """Catches the mutation "bindings checked only for module names" (and "`__name__` exempt when assigned"):
    with `__name__` set to `triton.language.extra.libdevice`, Triton's compiler replaced a global by
    `getattr(libdevice, value.__name__)`, the libdevice module's `__builtins__` (corpus:
    triton_module_name_builtins)."""
    findings = check_source(_placed(where, snippet), ["A", "B", "C"])
    assert any(f.rule == "special-name" and "binds the special name '__" in f.message for f in findings), findings


def test_reading_the_module_name_stays_allowed():
    assert check_source(source(top="if __name__ == '__main__':\n    print(__name__)"), ["A", "B", "C"]) == []


def test_a_class_pattern_reads_no_attribute_by_position():
    """`case C(p)` reads the attribute `C.__match_args__` names (a Tensor subclass naming `matmul` reached
    PyTorch's matmul; corpus: triton_match_args_matmul). Mutation caught: positional sub-patterns unchecked."""
    findings = check_source(source(host="match A:\n        case torch.Size(n):\n            pass"), ["A", "B", "C"])
    assert any(f.rule == "match-attribute" for f in findings), findings
    assert check_source(source(host="match A:\n        case torch.Size():\n            pass"), ["A", "B", "C"]) == []


LAUNCH_OPTION_ROUTES = [
    # (id, snippet in run): each sets a compile option other than the tuning ones; all passed before
    ("keyword", "k[(1,)](C, N=16, ptx_options='--options-file /etc/passwd')"),
    ("ir-override", "k[(1,)](C, N=16, ir_override='/tmp/k.ptx')"),
    ("dict-key", "o = {'extern_libs': {'x': '/tmp/x.bc'}}\n    k[(1,)](C, N=16, **o)"),
    ("computed-key", "o = {'ptx_' + 'options': '-v'}\n    k[(1,)](C, N=16, **o)"),
    ("dict-call", "o = dict(N=16)\n    k[(1,)](C, **o)"),
    ("mutated", "o = {'N': 16}\n    o['ptx_' + 'options'] = '-v'\n    k[(1,)](C, **o)"),
    ("nested-unpack", "k[(1,)](C, **{'N': 16, **A})"),
]  # fmt: skip


@pytest.mark.parametrize("snippet", [r[1] for r in LAUNCH_OPTION_ROUTES], ids=[r[0] for r in LAUNCH_OPTION_ROUTES])
def test_a_launch_sets_only_tuning_options(snippet: str):
    """Catches the mutation "launch keywords unchecked": Triton takes every launch keyword that names a compile
    option, and `ptx_options='--options-file /etc/passwd'` made ptxas print the file into the verdict (corpus:
    triton_launch_ptx_options)."""
    findings = check_source(source(host=snippet), ["A", "B", "C"])
    assert any(f.rule == "launch-option" for f in findings), findings


def test_heuristics_keys_are_literal_and_not_compile_options():
    wrapped = "\n\n@triton.heuristics({heur})\n@triton.jit\ndef h(x_ptr, N: tl.constexpr):\n    pass\n"
    for heur, refused in [
        ("{'N': lambda a: 16}", False),
        ("{'ptx_options': lambda a: '-v'}", True),
        ("{'ptx_' + 'options': lambda a: '-v'}", True),
    ]:
        findings = check_source(source(top=wrapped.format(heur=heur)), ["A", "B", "C"])
        assert any(f.rule == "launch-option" for f in findings) == refused, (heur, findings)


def test_tuning_options_and_literal_unpacking_stay_allowed():
    """The honest starters unpack a dict display of block sizes and set num_warps/num_stages."""
    host = "blocks = {'N': 16}\n    k[(1,)](C, num_warps=4, num_stages=3, **blocks)"
    assert check_source(source(host=host), ["A", "B", "C"]) == []
