"""The walk behind the Triton policy's allowlist: what each allowed module exposes, name by name, and what
kernel code may read on a Triton value. Its output is the committed table `evaluator/source_policy/triton_policy_table.py`;
regenerate it after a Triton upgrade (tests/evaluator/test_triton_policy_walk.py compares the two):

    .venv/bin/python -m evaluator.source_policy.triton_policy_walk > evaluator/source_policy/triton_policy_table.py

A name is admitted only when its value is a Triton (or, for `math` and `torch`, that module's own) function,
class or constant, or one of the kernel language's namespaces below. Everything else a module happens to hold
is refused with the reason: other modules (`tl.core`, `tl.extra.pkgutil`, `typing.sys` ...), functions and
classes imported from elsewhere (`functools.wraps`, `typing.TypeVar`), Python's builtins (the loader, eval and
exec family), containers and foreign objects. It also lists the backends' compile options, which a launch
keyword of that name sets. Imports Triton and torch: build-time only, never at policy time.
"""

from __future__ import annotations

import functools
import importlib
import pprint
import sys
import types
from typing import Any

# Modules of the kernel language that host and kernel code may name. Other submodules (`core`, `semantic`,
# `standard`, `random`, `extra.hip`, `extra.cuda.utils`) are refused: their public names are re-exported by
# `triton.language`, and they also hold what they imported (`builtins`, `inspect`, `typing`, `pkgutil`).
LANGUAGE_NAMESPACES = (
    "triton.language",
    "triton.language.math",
    "triton.language.extra",
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda",
    "triton.language.extra.cuda.libdevice",
)
# Host-only namespaces, chosen by hand (the walk still classifies each name): the decorators and integer
# helpers of `triton`, the descriptor class, and from torch only dtypes, the allocator and annotation types.
CURATED = {
    "triton": ("jit", "heuristics", "cdiv", "next_power_of_2", "language", "tools", "set_allocator", "constexpr"),
    "triton.tools": ("tensor_descriptor",),
    "triton.tools.tensor_descriptor": ("TensorDescriptor",),
    "torch": (
        "empty", "Tensor", "Size", "dtype", "device", "bfloat16", "float16", "half", "float32", "float", "float64",
        "int8", "uint8", "int16", "int32", "int64", "bool", "float8_e4m3fn", "float8_e5m2",
    ),
}  # fmt: skip
WALKED = ("math", *LANGUAGE_NAMESPACES)
NAMESPACES = (*CURATED, *WALKED)
# Refused by name whatever they are bound to: the loader/eval/exec/import family, reflection, and modules that
# reach the process, files or other code. A value check alone would miss a safe-looking alias of one of them.
DENIED_NAMES = frozenset(
    {
        "os", "sys", "ctypes", "importlib", "pkgutil", "inspect", "typing", "builtins", "subprocess", "socket",
        "gc", "types", "functools", "marshal", "pickle", "shutil", "signal", "threading", "multiprocessing",
        "runpy", "code", "codeop", "pathlib", "io", "tempfile", "weakref", "operator", "ast", "dis",
        "eval", "exec", "compile", "open", "input", "breakpoint", "getattr", "setattr", "delattr", "hasattr",
        "vars", "globals", "locals", "dir", "type", "super", "object", "memoryview", "help", "exit", "quit",
        "format", "format_map", "mro", "module", "modules", "module_from_spec", "spec", "module_finder",
        "loader", "import_module", "reload", "system", "popen", "fn", "used_global_vals", "globals_dict",
        "handle", "to_ir",  # the compiler's C++ IR objects: no kernel needs them, and they reach its bindings
    }
)  # fmt: skip
# Kernel values whose attributes kernel code reads (`x.to(...)`, `p.dtype.element_ty`, `desc.load(...)`).
VALUE_CLASSES = (
    "tensor", "dtype", "pointer_type", "block_type", "constexpr", "constexpr_type", "tuple", "tuple_type",
    "tensor_descriptor", "tensor_descriptor_type", "slice",
)  # fmt: skip
_DESCRIPTORS = (
    types.MethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)
_ABSENT = object()
_PLAIN = (int, float, complex, bool, str, bytes, type(None))


def classify(value: Any, name: str, root: str) -> tuple[str | None, str]:
    """(kind, "") for an admitted value, kind in function/class/constant/property; (None, why) when refused.

    `root` is the top package of the namespace holding it: a function or class must come from Triton or from
    that package itself (`math.sqrt`, `torch.empty`), never from `builtins`, `functools`, `typing` ...
    """
    if name in DENIED_NAMES:
        return None, "a name of the loader, reflection or system family"
    if isinstance(value, types.ModuleType):
        return None, f"the module '{value.__name__}'"
    if isinstance(value, _PLAIN):
        return "constant", ""
    if isinstance(value, property):
        fget = value.fget
        return ("property", "") if fget is not None and _own(fget, root) else (None, "a foreign property")
    if isinstance(value, functools.cached_property):
        return ("property", "") if _own(value.func, root) else (None, "a foreign property")
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, _DESCRIPTORS):  # a C method or slot of a class: judged by the class that defines it
        owner = getattr(value, "__objclass__", None)
        return ("function", "") if owner is not None and _own(owner, root) else (None, "a foreign method")
    if isinstance(value, type):
        return ("class", "") if _own(value, root) else (None, f"the class '{_where(value)}'")
    if isinstance(value, types.BuiltinMethodType) and isinstance(getattr(value, "__self__", None), _PLAIN):
        return "function", ""  # a method of a plain value (`"...".split`), not a module's function
    if isinstance(value, (types.BuiltinFunctionType, types.FunctionType, types.MethodType)):
        if getattr(value, "__module__", None) == "builtins" or not _own(value, root):
            return None, f"the function '{_where(value)}'"
        return "function", ""
    if isinstance(value, (list, dict, set, tuple, frozenset, types.MappingProxyType)):
        return None, f"a {type(value).__name__} (a container can hold anything)"
    if _own(type(value), root):  # an instance of a Triton (torch) class: a JITFunction, a dtype, an enum member
        return ("function" if callable(value) else "constant"), ""
    return None, f"a '{_where(type(value))}' object"


def walk() -> dict[str, Any]:
    """The table: admitted and refused names per namespace, and the attributes kernel code may read on values."""
    import triton

    for ns in NAMESPACES:  # a submodule is an attribute of its parent only once imported
        importlib.import_module(ns)
    admitted: dict[str, dict[str, str]] = {}
    refused: dict[str, dict[str, str]] = {}
    for ns in NAMESPACES:
        module = sys.modules[ns]
        root = ns.split(".")[0]
        names = CURATED.get(ns) or [n for n in dir(module) if not n.startswith("_")]
        admitted[ns], refused[ns] = {}, {}
        for name in sorted(names):
            if not hasattr(module, name):  # a curated name this Triton lacks (`triton.constexpr` before 3.x)
                continue
            value = getattr(module, name)
            if (
                isinstance(value, types.ModuleType)
                and value.__name__ == f"{ns}.{name}"
                and value.__name__ in NAMESPACES
            ):
                admitted[ns][name] = "module"
                continue
            kind, why = classify(value, name, root)
            if kind is None:
                refused[ns][name] = why
            else:
                admitted[ns][name] = kind
    values, value_refused = _value_attributes(admitted)
    return {
        "triton_version": triton.__version__,
        "admitted": admitted,
        "refused": {ns: r for ns, r in refused.items() if r},
        "value_attributes": values,
        "value_refused": value_refused,
        "compile_options": compile_options(),
    }


def compile_options() -> list[str]:
    """The names a kernel launch's keywords set as compile options (the backends' option classes: Triton takes
    every launch keyword that names one of their fields, `ptx_options` and `ir_override` among them)."""
    import dataclasses

    from triton.backends.amd.compiler import HIPOptions
    from triton.backends.nvidia.compiler import CUDAOptions

    return sorted({f.name for options in (CUDAOptions, HIPOptions) for f in dataclasses.fields(options)})


def leaves(admitted: dict[str, dict[str, str]]) -> list[tuple[str, Any]]:
    """Every admitted non-module value, with its dotted name."""
    out = []
    for ns, names in admitted.items():
        for name, kind in names.items():
            if kind != "module":
                out.append((f"{ns}.{name}", getattr(sys.modules[ns], name)))
    return out


def _value_attributes(admitted: dict[str, dict[str, str]]) -> tuple[list[str], dict[str, str]]:
    """Public attributes of the kernel language's value classes and of sample instances, each classified; then
    dropped if, read on any admitted object (`tl.sum.fn`, `tl.sum.type`), it gives something not admitted."""
    import triton.language as tl

    samples: list[Any] = [getattr(tl, c) for c in VALUE_CLASSES if hasattr(tl, c)]
    block = tl.block_type(tl.float32, [16])
    samples += [tl.float32, tl.pointer_type(tl.float32), block, tl.constexpr(1), tl.tensor(None, block)]
    candidates: dict[str, str | None] = {}
    for obj in samples:
        for name in dir(obj):
            if name.startswith("_"):
                continue
            kind, why = classify(_static(obj, name), name, "triton")
            if kind is None:
                candidates[name] = why
            else:
                candidates.setdefault(name, None)
    for dotted, obj in leaves(admitted):
        root = dotted.split(".")[0]
        for name in [n for n, why in candidates.items() if why is None]:
            try:
                value = getattr(obj, name)
            except Exception:  # noqa: BLE001 - absent or failing: nothing read there
                value = _ABSENT
            if value is _ABSENT:
                continue
            kind, why = classify(value, name, root)
            if kind is None:
                candidates[name] = f"on {dotted}: {why}"
    admitted_names = sorted(n for n, why in candidates.items() if why is None)
    return admitted_names, {n: why for n, why in sorted(candidates.items()) if why is not None}


def _static(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name)
    except Exception:  # noqa: BLE001 - a property that needs a real IR handle: judge the descriptor itself
        for klass in type(obj).__mro__:
            if name in vars(klass):
                return vars(klass)[name]
        return None


def _own(value: Any, root: str) -> bool:
    module = getattr(value, "__module__", None) or ""
    return module == root or module.startswith(f"{root}.") or module.startswith("triton.")


def _where(value: Any) -> str:
    return f"{getattr(value, '__module__', None) or '?'}.{getattr(value, '__qualname__', type(value).__name__)}"


def render(table: dict[str, Any]) -> str:
    """The table as the Python module that is committed."""
    head = '"""Generated by `python -m evaluator.source_policy.triton_policy_walk`; do not edit (see that module)."""\n\n# fmt: off\n'
    body = "".join(
        f"{key.upper()} = {pprint.pformat(table[key], width=116, sort_dicts=True)}\n"
        for key in ("triton_version", "admitted", "refused", "value_attributes", "value_refused", "compile_options")
    )
    return head + body


if __name__ == "__main__":
    sys.stdout.write(render(walk()))
