"""The walk behind the Triton policy's allowlist (evaluator/source_policy/triton_policy_walk.py) and the committed table it
generates: regenerating gives the committed file; every name the table admits is, read live, a Triton (or
math/torch) function, class or constant or a language namespace, never another module, a builtin of the
loader/eval/exec family or a container; and the names known to reach them are refused with their reason.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import os
import sys
import types
import typing
from pathlib import Path

import pytest

from evaluator.source_policy import triton_policy_table as table
from evaluator.source_policy import triton_policy_walk as walk
from evaluator.source_policy.triton_policy import HOST_ATTRIBUTES, VALUE_ATTRIBUTES

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")
tl = pytest.importorskip("triton.language")

for _ns in walk.NAMESPACES:
    importlib.import_module(_ns)


def test_regenerating_the_table_gives_the_committed_file():
    """Catches a hand edit of the table, or a walk change without regenerating (the table is what runs)."""
    if triton.__version__ != table.TRITON_VERSION:
        pytest.skip(f"table made with Triton {table.TRITON_VERSION}, this is {triton.__version__}: regenerate")
    assert walk.render(walk.walk()) == Path(table.__file__).read_text()


def _live(ns: str, name: str):
    return getattr(sys.modules[ns], name)


ADMITTED = [(ns, name, kind) for ns, names in table.ADMITTED.items() for name, kind in names.items()]


@pytest.mark.parametrize(("ns", "name", "kind"), ADMITTED, ids=[f"{ns}.{name}" for ns, name, _ in ADMITTED])
def test_every_admitted_name_is_a_triton_function_class_constant_or_namespace(ns: str, name: str, kind: str):
    """Catches a walk (or a hand-edited table) that admits a module, a builtin or a foreign function."""
    value = _live(ns, name)
    assert name not in walk.DENIED_NAMES
    if kind == "module":
        assert isinstance(value, types.ModuleType) and value.__name__ in walk.NAMESPACES
        assert value.__name__ == f"{ns}.{name}"
        return
    assert not isinstance(value, types.ModuleType)
    assert value not in vars(builtins).values() or isinstance(value, (int, float, bool, str, type(None)))
    if kind in ("function", "class"):
        module = getattr(value, "__module__", None) or type(value).__module__
        root = ns.split(".")[0]
        assert module.startswith(("triton.", f"{root}.")) or module == root, (module, value)
    else:
        assert kind == "constant"
        assert isinstance(value, (int, float, bool, str)) or type(value).__module__.startswith(("triton.", "torch"))


def test_the_language_namespaces_hold_nothing_but_what_was_judged():
    """Every public name of a walked namespace is either admitted or refused with a reason (none forgotten)."""
    for ns in walk.WALKED:
        public = {n for n in dir(sys.modules[ns]) if not n.startswith("_")}
        judged = set(table.ADMITTED[ns]) | set(table.REFUSED.get(ns, {}))
        assert public <= judged, (ns, public - judged)


@pytest.mark.parametrize(
    ("ns", "name", "why"),
    [
        ("triton.language", "core", "module"),
        ("triton.language", "standard", "module"),
        ("triton.language.extra", "pkgutil", "loader"),
        ("triton.language.extra", "module_from_spec", "loader"),
        ("triton.language.extra", "hip", "module"),
        ("triton.language.math", "core", "module"),
        ("triton.language.math", "wraps", "functools.wraps"),
        ("triton.language.math", "T", "typing.TypeVar"),
    ],
)
def test_the_known_reaches_are_refused_with_their_reason(ns: str, name: str, why: str):
    assert name not in table.ADMITTED[ns]
    assert why in table.REFUSED[ns][name]


def test_classify_refuses_modules_loaders_foreign_functions_and_containers():
    """The classifier itself, on the values the issue reached and on the ones kernels need."""
    for value, name in [
        (os, "anything"),
        (typing, "typing_"),
        (builtins.eval, "e"),
        (builtins.exec, "x"),
        (builtins.__import__, "imp"),
        (importlib.import_module, "im"),
        (functools.wraps, "w"),
        ({"a": 1}, "d"),
        ([1], "lst"),
        (sys.modules, "m"),
        (tl.sum.used_global_vals, "u"),
        (tl.sum.fn, "fn"),
        (1, "getattr"),  # refused by its name whatever it is bound to
    ]:
        assert walk.classify(value, name, "triton")[0] is None, (value, name)
    assert walk.classify(tl.load, "load", "triton")[0] == "function"
    assert walk.classify(tl.sum, "sum", "triton")[0] == "function"  # a JITFunction
    assert walk.classify(tl.tensor, "tensor", "triton")[0] == "class"
    assert walk.classify(tl.float32, "float32", "triton")[0] == "constant"


@pytest.mark.parametrize("attr", sorted(VALUE_ATTRIBUTES | HOST_ATTRIBUTES))
def test_value_attributes_read_on_any_admitted_object_give_nothing_dangerous(attr: str):
    """Kernel code may read VALUE_ATTRIBUTES, host code HOST_ATTRIBUTES, on any value, including the admitted
    functions and classes themselves (`f = tl.sum; f.<attr>`): on none may it give a module, a loader or a
    container such as JITFunction.used_global_vals (which holds a module's globals, `__builtins__` among them).
    Catches a walk that admits an attribute because it is harmless on tensors without checking other objects."""
    assert attr not in walk.DENIED_NAMES
    for dotted, obj in walk.leaves(table.ADMITTED):
        value = getattr(obj, attr, walk._ABSENT)
        if value is walk._ABSENT:
            continue
        assert walk.classify(value, attr, dotted.split(".")[0])[0] is not None, (dotted, attr, value)


def test_what_kernels_read_on_values_is_admitted():
    """The walk keeps what honest kernels use (a walk too strict would refuse the reference kernels)."""
    assert {"to", "dtype", "element_ty", "T", "shape", "load", "store", "reshape", "value"} <= VALUE_ATTRIBUTES
    assert {"fn", "used_global_vals", "handle", "type", "format", "module"}.isdisjoint(VALUE_ATTRIBUTES)


def test_the_compile_options_a_launch_could_set_are_walked():
    """A launch keyword naming any of these sets it (triton/backends/*/compiler.py); the policy refuses all but
    the tuning ones, so the walk must list the ones that read files or pass arguments to ptxas."""
    from evaluator.source_policy.triton_policy import LAUNCH_OPTIONS

    assert {"ptx_options", "ir_override", "extern_libs", "arch"} <= set(table.COMPILE_OPTIONS)
    assert set(table.COMPILE_OPTIONS) == set(walk.compile_options())
    assert LAUNCH_OPTIONS <= set(table.COMPILE_OPTIONS)
