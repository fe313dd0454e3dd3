"""Source policy for Triton submissions, checked on the Python AST before anything runs.

A Triton submission is one Python file: `@triton.jit` kernels plus a host function `run(...)` that launches
them (docs/kernel-abi.md). The benchmark measures those kernels, so the host code may only look at tensors
(shapes, strides, dtypes, views), allocate workspace with `torch.empty`, and launch; it may not compute with
PyTorch (`@`, `torch.matmul`, `nn.functional`, `scaled_dot_product_attention`, tensor methods that launch
work), load code (`exec`, `eval`, `compile`, `__import__`, `importlib`), reach modules indirectly (`getattr`,
dunder attributes, a module bound to another name), or touch files, the network or processes (nothing but
`triton`, `triton.language`, `triton.tools.tensor_descriptor`, `math` and `torch` may be imported).

Host code works on an allowlist (the names below); kernel bodies are Triton's language, which its compiler
checks, so there only the rules that matter in any Python apply (no torch, no dunders, no loaders). This is a
first line only: what makes a submission honest is the integrity checks of the candidate process (only the
submission's kernels count, fresh inputs every call, the parent's own clock).
"""

from __future__ import annotations

import ast

from evaluator.verdict import PolicyFinding

MAX_SOURCE_BYTES = 1024 * 1024
_QUOTE_CAP = 200

ALLOWED_MODULES = ("triton", "triton.language", "triton.tools.tensor_descriptor", "math", "torch")
# What host code may take from torch: dtypes, the workspace allocator and the types for annotations.
TORCH_NAMES = frozenset(
    {
        "empty",
        "Tensor",
        "Size",
        "dtype",
        "device",
        "bfloat16",
        "float16",
        "half",
        "float32",
        "float",
        "float64",
        "int8",
        "uint8",
        "int16",
        "int32",
        "int64",
        "bool",
        "float8_e4m3fn",
        "float8_e5m2",
    }
)
# What host code may take from triton: the decorators, integer helpers, the language and descriptors. Not
# autotune (it benchmarks, i.e. compiles and launches, at run time), not runtime/compiler/knobs/testing.
TRITON_NAMES = frozenset(
    {"jit", "heuristics", "cdiv", "next_power_of_2", "language", "tools", "set_allocator", "constexpr"}
)
TRITON_TOOLS_NAMES = frozenset({"tensor_descriptor", "TensorDescriptor"})
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


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = _dotted(target)
        if name in ("triton.jit", "jit"):
            return True
    return False


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


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
            if not _module_allowed(alias.name):
                self._add("import", f"imports '{alias.name}' (allowed: {', '.join(ALLOWED_MODULES)})", node)
                continue
            if alias.asname:
                self.modules[alias.asname] = alias.name
            else:
                self.modules[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or not _module_allowed(module):
            shown = "." * node.level + module
            self._add("import", f"imports from '{shown}' (allowed: {', '.join(ALLOWED_MODULES)})", node)
            return
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if alias.name == "*":
                self._add("import", f"'from {module} import *' hides what is used", node)
            elif not _name_allowed(module, alias.name):
                self._add("torch-compute" if module == "torch" else "import", f"imports '{full}'", node)
            elif _module_allowed(full):
                self.modules[alias.asname or alias.name] = full

    # code
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        kernel = _is_kernel(node)
        for dec in node.decorator_list:
            self.visit(dec)
        self.in_kernel += kernel
        for child in [*node.body, node.args]:
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
        if node.id in FORBIDDEN_CALLS or (
            node.id.startswith("__") and node.id.endswith("__") and node.id != "__name__"
        ):
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
        if not self.in_kernel and node.attr not in HOST_ATTRIBUTES:
            self._add(
                "host-attribute",
                f"host code uses '.{node.attr}' (allowed on tensors: shapes, strides, dtypes, views)",
                node,
            )
        self.visit(node.value)

    def _module_attribute(self, node: ast.Attribute, module: str, chain: list[str]) -> None:
        """`module.a.b...`: walk down the allowed submodules, then check the first name that is not one."""
        current = module
        for depth, name in enumerate(chain):
            full = f"{current}.{name}"
            if current.startswith("triton.language") or current == "math":
                return  # the kernel language and math are allowed whole
            if not _name_allowed(current, name):
                rule = "torch-compute" if current.startswith("torch") else "module-attribute"
                what = "a PyTorch operator or library call" if rule == "torch-compute" else "not part of the contract"
                self._add(rule, f"uses '{full}' ({what})", node)
                return
            if not _module_allowed(full):
                # An allowed name that is no module (torch.Tensor, torch.bfloat16, TensorDescriptor): what follows
                # is an attribute of a value, held to the host allowlist (torch.Tensor.matmul is a matmul).
                for attr in chain[depth + 1 :]:
                    if not self.in_kernel and attr not in HOST_ATTRIBUTES:
                        self._add(
                            "torch-compute" if module == "torch" else "host-attribute", f"uses '{full}.{attr}'", node
                        )
                        return
                    full = f"{full}.{attr}"
                return
            current = full
        if self.in_kernel and current == "torch":
            self._add("torch-compute", "uses torch inside a kernel", node)


def _chain(node: ast.Attribute) -> tuple[list[str], ast.Name | None]:
    parts = []
    cur: ast.AST = node
    while isinstance(cur, ast.Attribute):
        parts.append(cur.attr)
        cur = cur.value
    return list(reversed(parts)), cur if isinstance(cur, ast.Name) else None


def _module_allowed(name: str) -> bool:
    return name in ALLOWED_MODULES or name.startswith("triton.language.")


def _name_allowed(module: str, name: str) -> bool:
    if module == "torch":
        return name in TORCH_NAMES
    if module == "triton":
        return name in TRITON_NAMES
    if module == "triton.tools":
        return name == "tensor_descriptor"
    if module == "triton.tools.tensor_descriptor":
        return name in TRITON_TOOLS_NAMES
    return module == "math" or module.startswith("triton.language")


def _quote(lines: list[str], line_no: int | None) -> str:
    if line_no and 1 <= line_no <= len(lines):
        text = lines[line_no - 1].strip()
        return text if len(text) <= _QUOTE_CAP else text[: _QUOTE_CAP - 1] + "…"
    return ""


def _too_large(size: int) -> PolicyFinding:
    return PolicyFinding("size", f"source is {size} bytes; the limit is {MAX_SOURCE_BYTES} bytes (1 MiB)")
