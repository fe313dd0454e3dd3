"""Source policy for Triton submissions, checked on the Python AST before anything runs.

A Triton submission is one Python file: `@triton.jit` kernels plus a host function `run(...)` that launches
them (docs/kernel-abi.md). The benchmark measures those kernels, so the host code may only look at tensors
(shapes, strides, dtypes, views), allocate workspace with `torch.empty`, and launch; it may not compute with
PyTorch (`@`, `torch.matmul`, `nn.functional`, `scaled_dot_product_attention`, tensor methods that launch
work), load code (`exec`, `eval`, `compile`, `__import__`, `importlib`), reach modules indirectly (`getattr`,
dunder attributes, a module bound to another name), bind a special name (`__name__ = ...`, `def __getattr__`),
or touch files, the network or processes (nothing but `triton`, `triton.language`,
`triton.tools.tensor_descriptor`, `math` and `torch` may be imported).

Module-level code, decorators, defaults and kernel bodies all run as Python (kernel bodies while Triton compiles
them), so names are allowlisted, never modules whole: every `module.a.b` chain and `from module import
a` is looked up name by name in `ADMITTED`, the committed walk of what each allowed module exposes
(evaluator/source_policy/triton_policy_walk.py), which refuses modules other than the language's namespaces (`tl.core`,
`tl.extra.pkgutil`), imported helpers and Python's builtins. Past a function, class or constant, host code may
read only `HOST_ATTRIBUTES` and kernel code only what Triton's values have (`VALUE_ATTRIBUTES`, same walk); a
module name may not be used as a value or rebound. The tree checked must be what runs: each kernel's text as
Triton extracts it must parse to the function checked here, `jit` only decorates kernels, and the file is
decoded as UTF-8 (evaluator/source_policy/triton_source.py). This is a first line only: what makes a submission honest is
the integrity checks of the candidate process (only the submission's kernels count, fresh inputs every call, the
parent's own clock), and what contains it is the sandbox and the host boundary (docs/threat-model.md).
"""

from __future__ import annotations

import ast

from evaluator.both_sides.verdict import PolicyFinding
from evaluator.source_policy import triton_policy_table as table
from evaluator.source_policy import triton_source

MAX_SOURCE_BYTES = 1024 * 1024
_QUOTE_CAP = 200

ALLOWED_MODULES = ("triton", "triton.language", "triton.tools.tensor_descriptor", "math", "torch")
# What each importable module admits, name by name (module/function/class/constant), from the committed walk
# of what the module exposes (evaluator/source_policy/triton_policy_walk.py): a name absent there is refused, and so is a
# module that is not one of the kernel language's namespaces (`tl.core`, `tl.extra.pkgutil`, `typing.sys`).
ADMITTED: dict[str, dict[str, str]] = table.ADMITTED
# Attributes kernel code may read on values (tensors, dtypes, descriptors, constexprs), from the same walk.
VALUE_ATTRIBUTES = frozenset(table.VALUE_ATTRIBUTES)
# Attributes host code may use on values (tensors, descriptors, shapes): looking and viewing, never computing.
HOST_ATTRIBUTES = frozenset(
    {
        "shape",
        "stride",
        "size",
        "dim",
        "ndim",
        "numel",
        "element_size",
        "itemsize",
        "dtype",
        "device",
        "is_contiguous",
        "data_ptr",
        "view",
        "as_strided",
        "transpose",
        "t",
        "T",
        "mT",
        "permute",
        "unsqueeze",
        "squeeze",
        "expand",
        "narrow",
        "select",
        "unflatten",
        "from_tensor",
    }
)
# A kernel launch's keywords that name a compile option set it (`k[grid](..., ptx_options="--options-file
# /etc/passwd")` made ptxas print the file; `ir_override` compiles IR read from a file, `extern_libs` links files):
# of the backends' options (the same walk), a launch may set only these, which tune the kernel the policy checked.
LAUNCH_OPTIONS = frozenset(
    {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_pdl", "launch_cooperative_grid"}
)
REFUSED_OPTIONS = frozenset(table.COMPILE_OPTIONS) - LAUNCH_OPTIONS
FORBIDDEN_CALLS = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "__import__",
        "open",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "memoryview",
        "help",
        "exit",
        "quit",
        "__builtins__",
        "__loader__",
        "__spec__",
        # Reflection: none reaches a module without a dunder, but none has a place in a kernel or its launch.
        "type",
        "super",
        "object",
        "dir",
        "hasattr",
    }
)


def check_source(source: str | bytes, params: list[str] | None = None) -> list[PolicyFinding]:
    """Every policy violation of a Triton file, in line order; empty means it may be compiled.

    `params` are the task's input and output names in order (the destination-passing `run` signature); when
    given, `run` must take exactly that many positional parameters.
    """
    if isinstance(source, bytes):
        if len(source) > MAX_SOURCE_BYTES:
            return [_too_large(len(source))]
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            return [PolicyFinding("encoding", f"source is not UTF-8 text (byte {exc.start})")]
    if len(source.encode("utf-8")) > MAX_SOURCE_BYTES:
        return [_too_large(len(source.encode("utf-8")))]
    if "\x00" in source:
        return [PolicyFinding("encoding", "source contains NUL bytes; it must be text")]
    lines = source.splitlines()
    try:
        tree = ast.parse(source, filename="kernel.py")
    except SyntaxError as exc:
        line = exc.lineno or None
        return [PolicyFinding("syntax", f"Python syntax error: {exc.msg}", line, _quote(lines, line))]
    checker = _Checker(lines)
    checker.visit(tree)
    checker.findings.extend(_entry_point(tree, lines, params))
    checker.findings.extend(_launch_keyword_findings(tree, lines))
    # What Python decodes and what Triton compiles must be what was checked here (evaluator/source_policy/triton_source.py).
    for f in [*triton_source.coding_findings(source), *triton_source.kernel_findings(tree, source)]:
        checker.findings.append(PolicyFinding(f.rule, f.message, f.line, f.text or _quote(lines, f.line)))
    unique: dict[tuple[str, int | None, str], PolicyFinding] = {}
    for f in checker.findings:
        unique.setdefault((f.rule, f.line, f.message), f)
    return sorted(unique.values(), key=lambda f: (f.line or 0, f.rule))


def run_signature(params: list[str]) -> str:
    """The Python `run` signature a Triton file must define (inputs in order, then the preallocated outputs)."""
    return "def run(" + ", ".join(params) + ") -> None"


def _entry_point(tree: ast.Module, lines: list[str], params: list[str] | None) -> list[PolicyFinding]:
    runs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
    kernels = [n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_kernel(n)]
    findings = []
    if not kernels:
        findings.append(PolicyFinding("no-kernel", "the file defines no @triton.jit kernel at top level"))
    if not runs:
        wanted = f" ({run_signature(params)})" if params is not None else ""
        findings.append(PolicyFinding("missing-run", f"the file must define a top-level function run{wanted}"))
        return findings
    fn = runs[-1]
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    line = fn.lineno
    if _is_kernel(fn):
        findings.append(PolicyFinding("run-signature", "run must be a plain Python function, not a kernel", line))
    if args.vararg or args.kwarg or args.kwonlyargs:
        findings.append(
            PolicyFinding(
                "run-signature",
                "run takes plain positional parameters only (no *args/**kwargs)",
                line,
                _quote(lines, line),
            )
        )
    if params is not None and len(positional) != len(params):
        findings.append(
            PolicyFinding(
                "run-signature",
                f"run takes {len(positional)} parameter(s); this task calls it as {run_signature(params)}",
                line,
                _quote(lines, line),
            )
        )
    return findings


def _launch_keyword_findings(tree: ast.Module, lines: list[str]) -> list[PolicyFinding]:
    """Keywords reach a launch's compile options by name: spelled at a call, as a dict's key, unpacked with `**`,
    or as a key of `triton.heuristics(...)` (Triton sets each key as a launch keyword). So names are checked where
    they are written, and only what shows every key may be unpacked or given to triton.heuristics: a dict display
    with literal string keys, or a name bound only to such displays and used only after `**`."""
    findings: list[PolicyFinding] = []

    def add(rule: str, message: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", None)
        findings.append(PolicyFinding(rule, message, line, _quote(lines, line)))

    def option(name: str, how: str, node: ast.AST) -> None:
        if name in REFUSED_OPTIONS:
            allowed = ", ".join(sorted(LAUNCH_OPTIONS))
            add("launch-option", f"{how} '{name}', a Triton compile option (a launch may set only {allowed})", node)

    displays: set[int] = set()  # names bound by `name = {literal keys}`
    unpacked: set[int] = set()  # names read right after `**`
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _literal_keys(node.value):
            displays.update(id(t) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.keyword) and node.arg is None and isinstance(node.value, ast.Name):
            unpacked.add(id(node.value))
    by_display: set[str] = set()
    otherwise: set[str] = set()  # names bound some other way, or read other than after `**`
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if id(node) not in unpacked:
                otherwise.add(node.id)
        elif isinstance(node, ast.Name):
            (by_display if id(node) in displays else otherwise).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            otherwise.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        else:
            otherwise.update(triton_source.bound_names(node))
    trusted = by_display - otherwise
    imports = triton_source.imported_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg is not None:
            option(node.arg, "passes the keyword", node)
        elif isinstance(node, ast.keyword):
            value = node.value
            if not (_literal_keys(value) or (isinstance(value, ast.Name) and value.id in trusted)):
                add(
                    "launch-option",
                    "unpacks with ** what is not a dict display of literal string keys (or a name bound only to"
                    " one and used only after **): its keys could name Triton compile options",
                    node.value,
                )
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    option(key.value, "uses the dict key", key)
        elif isinstance(node, ast.Call) and triton_source.resolve(node.func, imports) == "triton.heuristics":
            given = [*node.args, *(k.value for k in node.keywords)]
            if len(given) != 1 or not _literal_keys(given[0]):
                add("launch-option", "triton.heuristics takes one dict display of literal string keys", node)
    return findings


def _literal_keys(node: ast.expr) -> bool:
    """A dict display whose every key is a string literal (no `**` inside it)."""
    return isinstance(node, ast.Dict) and all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys
    )


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = triton_source.dotted(target)
        if name in ("triton.jit", "jit"):
            return True
    return False


class _Checker(ast.NodeVisitor):
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.findings: list[PolicyFinding] = []
        self.modules: dict[str, str] = {}  # local name -> module it is bound to
        self.in_kernel = 0

    def _add(self, rule: str, message: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", None)
        self.findings.append(PolicyFinding(rule, message, line, _quote(self.lines, line)))

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name not in ADMITTED:
                self._add("import", f"imports '{alias.name}' (allowed: {', '.join(ALLOWED_MODULES)})", node)
                continue
            if alias.asname:
                self._binds(alias.asname, node, alias.name)
                self.modules[alias.asname] = alias.name
            else:
                self.modules[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or module not in ADMITTED:
            shown = "." * node.level + module
            self._add("import", f"imports from '{shown}' (allowed: {', '.join(ALLOWED_MODULES)})", node)
            return
        for alias in node.names:
            full = f"{module}.{alias.name}"
            kind = ADMITTED[module].get(alias.name)
            if alias.name == "*":
                self._add("import", f"'from {module} import *' hides what is used", node)
            elif kind is None:
                rule = "torch-compute" if module == "torch" else "import"
                self._add(rule, f"imports '{full}' ({_refusal(module, alias.name)})", node)
            else:
                self._binds(alias.asname or alias.name, node, full if kind == "module" else None)
                if kind == "module":
                    self.modules[alias.asname or alias.name] = full

    # bindings, in any of Python's binding forms: a module's name may not be bound to anything else, and no
    # special name may be bound at all
    def _binds(self, name: str | None, node: ast.AST, module: str | None = None) -> None:
        """`name` bound to something other than the module it names (an import of that module again is fine),
        or a special name bound (`def __getattr__`, `import x as __name__`, `except E as __class__` ...)."""
        if name is not None and name in self.modules and self.modules[name] != module:
            self._add("module-alias", f"rebinds the module name '{name}'", node)
        if name is not None and _special(name):
            self._add("special-name", f"binds the special name '{name}' ({_SPECIAL_WHY})", node)

    def visit_arg(self, node: ast.arg) -> None:
        self._binds(node.arg, node)
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._binds(node.name, node)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._binds(node.name, node)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._binds(node.name, node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._binds(node.rest, node)
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        """`case C(attr=p)` reads `attr` on the subject, an attribute read like `subject.attr`; `case C(p)` reads
        the attribute that `C.__match_args__` names, which no spelling here shows, so it is refused."""
        if node.patterns:
            self._add(
                "match-attribute",
                "matches positional sub-patterns in a class pattern (they read the attributes the class's"
                " __match_args__ names; match on keywords instead)",
                node,
            )
        for attr in node.kwd_attrs:
            if attr.startswith("_"):
                self._add("dunder-attribute", f"matches on the attribute '{attr}'", node)
            else:
                self._value_attribute(node, attr, f".{attr} (in a class pattern)", torch=False)
        self.generic_visit(node)

    def visit_TypeVar(self, node: ast.AST) -> None:  # `def f[tl]()` (Python 3.12 type parameters)
        self._binds(getattr(node, "name", None), node)
        self.generic_visit(node)

    visit_ParamSpec = visit_TypeVarTuple = visit_TypeVar

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self._binds(name, node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for name in node.names:
            self._binds(name, node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._binds(node.name, node)
        self.generic_visit(node)

    # code
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        """Decorators, defaults and annotations run where the function is defined (host code); the body of a
        kernel is kernel code, which Triton's compiler also runs in Python as it compiles."""
        self._binds(node.name, node)
        kernel = _is_kernel(node)
        for child in [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]:
            self.visit(child)
        self.in_kernel += kernel
        for child in node.body:
            self.visit(child)
        self.in_kernel -= kernel

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._add("syntax", "async functions are not part of the contract", node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self._add(
                "matmul-operator", "uses the '@' operator (a PyTorch matmul on the host; tl.dot in kernels)", node
            )
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult):
            self._add("matmul-operator", "uses the '@=' operator", node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            self._add("dynamic-code", f"calls '{node.func.id}'", node)
            for child in [*node.args, *node.keywords]:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if _special(node.id) and not isinstance(node.ctx, ast.Load):
            self._binds(node.id, node)
        elif node.id in FORBIDDEN_CALLS or (_special(node.id) and node.id != "__name__"):
            self._add("dynamic-code", f"uses '{node.id}'", node)
        elif node.id in self.modules and not isinstance(node.ctx, ast.Load):
            self._add("module-alias", f"rebinds the module name '{node.id}'", node)
        elif node.id in self.modules:
            # Reached here only when not the base of an attribute (visit_Attribute does not descend into it).
            self._add(
                "module-alias", f"uses the module '{node.id}' as a value (only '{node.id}.name' is allowed)", node
            )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__") and node.attr.endswith("__"):
            self._add("dunder-attribute", f"uses the attribute '{node.attr}'", node)
            return
        chain, base = _chain(node)
        if base is not None and base.id in self.modules:
            self._module_attribute(node, self.modules[base.id], chain)
            return
        self._value_attribute(node, node.attr, f".{node.attr}", torch=False)
        self.visit(node.value)

    def _value_attribute(self, node: ast.AST, attr: str, shown: str, *, torch: bool) -> bool:
        """`value.attr` (a tensor, dtype, descriptor, a call's result): host code may look and view, kernel code
        may read what the kernel language's values have. False when refused."""
        if self.in_kernel:
            if attr in VALUE_ATTRIBUTES:
                return True
            why = table.VALUE_REFUSED.get(attr, "not an attribute of a Triton tensor, dtype or descriptor")
            self._add("kernel-attribute", f"kernel code uses '{shown}' ({why})", node)
            return False
        if attr in HOST_ATTRIBUTES:
            return True
        self._add(
            "torch-compute" if torch else "host-attribute",
            f"host code uses '{shown}' (allowed on tensors: shapes, strides, dtypes, views)",
            node,
        )
        return False

    def _module_attribute(self, node: ast.Attribute, module: str, chain: list[str]) -> None:
        """`module.a.b...`: each name looked up in what its module admits, down the kernel language's
        namespaces; past the first name that is no module (a function, class or constant), the attributes of
        a value. A chain that ends on a module uses the module as a value (`f(tl.math)`, `(tl.extra if c else
        x).pkgutil`), which is refused like a bare module name."""
        torch = module.split(".")[0] == "torch"
        if self.in_kernel and torch:
            self._add("torch-compute", "uses torch inside a kernel", node)
            return
        current = module
        for depth, name in enumerate(chain):
            full = f"{current}.{name}"
            kind = ADMITTED.get(current, {}).get(name)
            if kind is None:
                rule = "torch-compute" if torch else "module-attribute"
                why = "a PyTorch operator or library call" if torch else _refusal(current, name)
                self._add(rule, f"uses '{full}' ({why})", node)
                return
            if kind != "module":
                for attr in chain[depth + 1 :]:
                    full = f"{full}.{attr}"
                    if not self._value_attribute(node, attr, full, torch=torch):
                        return
                return
            current = full
        self._add("module-alias", f"uses the module '{current}' as a value (only '{current}.name' is allowed)", node)


# Python and Triton look special names up by themselves, on the module and on the file's classes and values, so
# binding one steers their code: a module's `__name__` becomes the `__module__` of what is defined after it,
# which Triton's compiler trusts (a `triton.language...` value enters kernels without `tl.constexpr`; a
# `triton.language.extra.libdevice` one is replaced by `getattr(libdevice, value.__name__)`, and a class attribute
# `__name__ = "__builtins__"` makes that the libdevice module's builtins); a class's `__match_args__` names the
# attributes a class pattern reads; `__triton_builtin__` makes Triton hand a callable its compiler objects;
# `__getattr__`, `__eq__` and the rest run the file's code inside Python's and Triton's own. Reading `__name__`
# stays allowed (`if __name__ == "__main__":`).
_SPECIAL_WHY = "Python and Triton look such names up on the module, its classes and values by themselves"


def _special(name: str) -> bool:
    """A name of the `__x__` form, which Python and Triton treat as protocol."""
    return name.startswith("__") and name.endswith("__")


def _refusal(module: str, name: str) -> str:
    """Why `module.name` is refused, as the walk recorded it (a module, a builtin, a foreign function ...)."""
    return table.REFUSED.get(module, {}).get(name, "not part of the contract")


def _chain(node: ast.Attribute) -> tuple[list[str], ast.Name | None]:
    parts = []
    cur: ast.AST = node
    while isinstance(cur, ast.Attribute):
        parts.append(cur.attr)
        cur = cur.value
    return list(reversed(parts)), cur if isinstance(cur, ast.Name) else None


def _quote(lines: list[str], line_no: int | None) -> str:
    if line_no and 1 <= line_no <= len(lines):
        text = lines[line_no - 1].strip()
        return text if len(text) <= _QUOTE_CAP else text[: _QUOTE_CAP - 1] + "…"
    return ""


def _too_large(size: int) -> PolicyFinding:
    return PolicyFinding("size", f"source is {size} bytes; the limit is {MAX_SOURCE_BYTES} bytes (1 MiB)")
