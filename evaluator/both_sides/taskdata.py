"""Task data: FlashInfer-Trace definitions and workloads, plus PTXBench's own per-task file.

Pure parsing and validation, no GPU and no Django. A task lives in a folder:

    tasks/<name>/definition.json   FlashInfer Trace Definition (name, op_type, axes, inputs, outputs, reference ...)
    tasks/<name>/workloads.jsonl   one FlashInfer Trace workload per line (bare, or wrapped in a trace record)
    tasks/<name>/hidden_workloads.jsonl   optional, same format: workloads of the ranked (hidden) evaluation
    tasks/<name>/ptxbench.json     PTXBench data beside the schema: targets per arch, baselines, FLOPs, packs
    tasks/<name>/<baseline>.py     library baseline(s) named by ptxbench.json

FLOP expressions are evaluated by evaluator/both_sides/flops.py, the kernel's `run` signature is evaluator/build/kernel_abi.py, and
evaluator/suite/flashinfer_import.py reads a FlashInfer-Trace data set (definitions/**.json, workloads/**.jsonl).
Every problem raises TaskDataError naming the file and the field.

Used on both sides of the trust boundary: the parent loads tasks for every stage, and the candidate process loads
the staged copy of its task (definition, workload, baselines) here.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.both_sides.arches import ARCHES, FAMILY_OPCODES
from evaluator.both_sides.flops import evaluate_flops

DTYPES = frozenset(
    {
        "float64",
        "float32",
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float4_e2m1",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
    }
)
INPUT_KINDS = frozenset({"random", "scalar", "safetensors"})
DEFAULT_ATOL = 1e-2
DEFAULT_RTOL = 1e-2


class TaskDataError(ValueError):
    """A task file is malformed. `path` and `field` say where."""

    def __init__(self, path: Path | str, field: str, message: str) -> None:
        self.path = str(path)
        self.field = field
        self.message = message
        super().__init__(f"{self.path}: field '{field}': {message}")


@dataclass(frozen=True)
class Axis:
    name: str
    kind: str  # "const" or "var"
    value: int | None  # set for const axes
    description: str = ""


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[str, ...] | None  # axis names; None for a scalar
    dtype: str
    description: str = ""

    @property
    def is_scalar(self) -> bool:
        return self.shape is None


@dataclass(frozen=True)
class Definition:
    name: str
    op_type: str
    description: str
    axes: tuple[Axis, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    reference: str  # Python source defining run(*inputs) -> output or tuple of outputs
    tags: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def axis(self, name: str) -> Axis:
        for a in self.axes:
            if a.name == name:
                return a
        raise KeyError(name)

    def shape_of(self, spec: TensorSpec, axes: Mapping[str, int]) -> tuple[int, ...]:
        """Concrete shape of `spec` for a workload's axis values (const axes filled in)."""
        if spec.shape is None:
            return ()
        values = self.axis_values(axes)
        return tuple(values[a] for a in spec.shape)

    def axis_values(self, axes: Mapping[str, int]) -> dict[str, int]:
        values = {a.name: a.value for a in self.axes if a.kind == "const"}
        values.update(axes)
        return values  # type: ignore[return-value]


@dataclass(frozen=True)
class Workload:
    uuid: str
    axes: Mapping[str, int]  # the var axes' values
    inputs: Mapping[str, Mapping[str, Any]]  # per input: {"type": "random"} | {"type": "scalar", "value": x} | ...
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class ArchTarget:
    arch: str
    families: tuple[str, ...]  # families that count as "uses the architecture" (any one of them)
    note: str = ""


@dataclass(frozen=True)
class TrustedFunction:
    """A function in trusted Python source from the task folder: a library baseline or the input generator."""

    id: str  # short id, e.g. "cublas"
    name: str  # what pages show, e.g. "cuBLAS via torch.matmul"
    source: str  # Python source defining `function`
    function: str = "run"


@dataclass(frozen=True)
class Task:
    definition: Definition
    workloads: tuple[Workload, ...]
    targets: Mapping[str, ArchTarget]
    baselines: tuple[TrustedFunction, ...]  # library baselines; the first one is the speedup reference
    flops: str  # arithmetic expression over axis names
    headline_workload: str | None
    knowledge_packs: Mapping[str, str]  # arch -> pack id
    group: str  # suite group, e.g. "gemm", "mha_fwd", "mha_bwd"
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL
    directory: str = ""
    rel_norm_bound: float | None = None  # bound on ||out-ref||/||ref||; None: the evaluator's default (5e-2)
    # Inputs that must be consistent with others (attention backward's O and LSE come from a forward pass):
    # trusted Python source defining `function(inputs: dict[str, Tensor]) -> dict[str, Tensor]`, run by the
    # evaluator after the random inputs are drawn; the returned tensors replace those inputs. None when unused.
    input_generator: TrustedFunction | None = None
    # Workloads for the ranked (hidden) evaluation, from hidden_workloads.jsonl beside workloads.jsonl; never
    # shown to submitters. Empty when the task defines none.
    hidden_workloads: tuple[Workload, ...] = ()

    @property
    def name(self) -> str:
        return self.definition.name

    def workload(self, uuid: str) -> Workload:
        for w in (*self.workloads, *self.hidden_workloads):
            if w.uuid == uuid:
                return w
        raise KeyError(uuid)

    def flops_for(self, workload: Workload) -> float:
        return evaluate_flops(self.flops, self.definition.axis_values(workload.axes))


# --------------------------------------------------------------------------- helpers


def _req(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: Path, prefix: str = "") -> Any:
    where = f"{prefix}{key}"
    if not isinstance(obj, Mapping) or key not in obj:
        raise TaskDataError(path, where, "is required")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TaskDataError(path, where, f"must be {_kind_name(kind)}, got {type(value).__name__}")
    return value


def _opt(
    obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any, path: Path, prefix: str = ""
) -> Any:
    if key not in obj or obj[key] is None:
        return default
    return _req(obj, key, kind, path, prefix)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
    }
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def read_json(path: Path) -> Any:
    """A JSON file's content; TaskDataError naming the file when it is missing or malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskDataError(path, "<file>", "is missing") from None
    except UnicodeDecodeError as exc:
        raise TaskDataError(path, "<file>", f"is not UTF-8 ({exc.reason})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskDataError(
            path, "<json>", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None


# --------------------------------------------------------------------------- definitions


@functools.lru_cache(maxsize=256)
def parse_python(source: str) -> ast.Module:
    """`ast.parse` of a task's Python text, kept per text: a long-lived process (a worker, the catalog sync in
    the portal and its tests) loads the same tasks again and again. The tree is only read, never changed."""
    return ast.parse(source)


def parse_definition(data: Any, path: Path) -> Definition:
    if not isinstance(data, Mapping):
        raise TaskDataError(path, "<root>", "must be a JSON object")
    name = _req(data, "name", str, path)
    if not name or not all(c.isalnum() or c in "_-" for c in name):
        raise TaskDataError(path, "name", "must be a non-empty identifier of letters, digits, '_' and '-'")
    op_type = _req(data, "op_type", str, path)
    description = _opt(data, "description", str, "", path)
    tags = tuple(_opt(data, "tags", list, [], path))
    for i, tag in enumerate(tags):
        if not isinstance(tag, str):
            raise TaskDataError(path, f"tags[{i}]", "must be a string")

    axes_raw = _req(data, "axes", dict, path)
    if not axes_raw:
        raise TaskDataError(path, "axes", "must declare at least one axis")
    axes: list[Axis] = []
    for axis_name, spec in axes_raw.items():
        where = f"axes.{axis_name}"
        if not isinstance(spec, Mapping):
            raise TaskDataError(path, where, "must be an object")
        kind = _req(spec, "type", str, path, f"{where}.")
        if kind == "const":
            value = _req(spec, "value", int, path, f"{where}.")
            if value <= 0:
                raise TaskDataError(path, f"{where}.value", "must be positive")
        elif kind == "var":
            value = None
        else:
            raise TaskDataError(path, f"{where}.type", f"must be 'const' or 'var', got {kind!r}")
        axes.append(Axis(axis_name, kind, value, _opt(spec, "description", str, "", path, f"{where}.")))
    axis_names = {a.name for a in axes}

    def tensors(key: str) -> tuple[TensorSpec, ...]:
        raw = _req(data, key, dict, path)
        if not raw:
            raise TaskDataError(path, key, "must declare at least one tensor")
        specs = []
        for tname, spec in raw.items():
            where = f"{key}.{tname}"
            if not tname.isidentifier():
                raise TaskDataError(path, where, "name must be a Python identifier")
            if not isinstance(spec, Mapping):
                raise TaskDataError(path, where, "must be an object")
            if "shape" not in spec:
                raise TaskDataError(path, f"{where}.shape", "is required (null for a scalar)")
            shape = spec["shape"]
            if shape is not None:
                if not isinstance(shape, list) or not all(isinstance(s, str) for s in shape):
                    raise TaskDataError(path, f"{where}.shape", "must be a list of axis names or null")
                for s in shape:
                    if s not in axis_names:
                        raise TaskDataError(path, f"{where}.shape", f"axis {s!r} is not declared in axes")
                shape = tuple(shape)
            dtype = _req(spec, "dtype", str, path, f"{where}.")
            if dtype not in DTYPES:
                raise TaskDataError(path, f"{where}.dtype", f"unknown dtype {dtype!r}")
            specs.append(TensorSpec(tname, shape, dtype, _opt(spec, "description", str, "", path, f"{where}.")))
        return tuple(specs)

    inputs = tensors("inputs")
    outputs = tensors("outputs")
    clash = {t.name for t in inputs} & {t.name for t in outputs}
    if clash:
        raise TaskDataError(path, "outputs", f"names also used by inputs: {sorted(clash)}")

    reference = _req(data, "reference", str, path)
    try:
        module = parse_python(reference)
    except SyntaxError as exc:
        raise TaskDataError(path, "reference", f"is not valid Python (line {exc.lineno}: {exc.msg})") from None
    run = next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "run"), None)
    if run is None:
        raise TaskDataError(path, "reference", "must define a function run(...)")
    params = [a.arg for a in run.args.args]
    expected = [t.name for t in inputs]
    if params != expected:
        raise TaskDataError(path, "reference", f"run{tuple(params)} must take the inputs in order {tuple(expected)}")

    return Definition(
        name=name,
        op_type=op_type,
        description=description,
        axes=tuple(axes),
        inputs=inputs,
        outputs=outputs,
        reference=reference,
        tags=tags,
        raw=dict(data),
    )


# --------------------------------------------------------------------------- workloads


def parse_workload(data: Any, definition: Definition, path: Path, line: int) -> Workload:
    prefix = f"line {line}: "
    if not isinstance(data, Mapping):
        raise TaskDataError(path, f"{prefix}<root>", "must be a JSON object")
    if "workload" in data:  # a FlashInfer trace record whose solution/evaluation are empty
        ref = data.get("definition")
        if ref is not None and ref != definition.name:
            raise TaskDataError(path, f"{prefix}definition", f"names {ref!r}, expected {definition.name!r}")
        data = data["workload"]
        prefix += "workload."
        if not isinstance(data, Mapping):
            raise TaskDataError(path, prefix.rstrip("."), "must be an object")
    uuid = _req(data, "uuid", str, path, prefix)
    try:
        uuidlib.UUID(uuid)
    except ValueError:
        raise TaskDataError(path, f"{prefix}uuid", f"{uuid!r} is not a UUID") from None
    axes = _req(data, "axes", dict, path, prefix)
    for a in definition.axes:
        if a.kind == "var":
            if a.name not in axes:
                raise TaskDataError(path, f"{prefix}axes.{a.name}", "is required (variable axis)")
        elif a.name in axes and axes[a.name] != a.value:
            raise TaskDataError(path, f"{prefix}axes.{a.name}", f"is const {a.value} in the definition")
    for name, value in axes.items():
        if name not in {a.name for a in definition.axes}:
            raise TaskDataError(path, f"{prefix}axes.{name}", "is not an axis of the definition")
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise TaskDataError(path, f"{prefix}axes.{name}", "must be a positive integer")
    inputs = _opt(data, "inputs", dict, {}, path, prefix)
    names = [t.name for t in definition.inputs]
    for name in inputs:
        if name not in names:
            raise TaskDataError(path, f"{prefix}inputs.{name}", "is not an input of the definition")
    resolved: dict[str, dict[str, Any]] = {}
    for spec in definition.inputs:
        desc = inputs.get(spec.name, {"type": "random"} if not spec.is_scalar else None)
        where = f"{prefix}inputs.{spec.name}"
        if desc is None:
            raise TaskDataError(path, where, "scalar inputs need {'type': 'scalar', 'value': ...}")
        if not isinstance(desc, Mapping):
            raise TaskDataError(path, where, "must be an object")
        kind = _req(desc, "type", str, path, f"{where}.")
        if kind not in INPUT_KINDS:
            raise TaskDataError(path, f"{where}.type", f"must be one of {sorted(INPUT_KINDS)}")
        if kind == "scalar" and "value" not in desc:
            raise TaskDataError(path, f"{where}.value", "is required for a scalar")
        if kind == "safetensors":
            _req(desc, "path", str, path, f"{where}.")
        resolved[spec.name] = dict(desc)
    return Workload(uuid=uuid, axes=dict(axes), inputs=resolved, raw=dict(data))


def parse_workloads(text: str, definition: Definition, path: Path) -> tuple[Workload, ...]:
    workloads = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskDataError(path, f"line {number}", f"invalid JSON: {exc.msg}") from None
        w = parse_workload(data, definition, path, number)
        if w.uuid in seen:
            raise TaskDataError(path, f"line {number}: uuid", f"duplicate workload {w.uuid}")
        seen.add(w.uuid)
        workloads.append(w)
    return tuple(workloads)


# --------------------------------------------------------------------------- ptxbench.json


def parse_task(
    definition: Definition, workloads: tuple[Workload, ...], extras: Any, path: Path, directory: Path
) -> Task:
    if not isinstance(extras, Mapping):
        raise TaskDataError(path, "<root>", "must be a JSON object")
    if extras.get("definition", definition.name) != definition.name:
        raise TaskDataError(path, "definition", f"names {extras['definition']!r}, expected {definition.name!r}")
    group = _req(extras, "group", str, path)
    flops = _req(extras, "flops", str, path)
    try:
        sample = {a.name: 3 for a in definition.axes}
        evaluate_flops(flops, sample)
    except (ValueError, SyntaxError) as exc:
        raise TaskDataError(path, "flops", str(exc)) from None

    targets: dict[str, ArchTarget] = {}
    for arch, spec in _req(extras, "targets", dict, path).items():
        where = f"targets.{arch}"
        if arch not in ARCHES:
            raise TaskDataError(path, where, f"unknown architecture (known: {', '.join(sorted(ARCHES))})")
        families = _req(spec, "families", list, path, f"{where}.")
        if not families:
            raise TaskDataError(path, f"{where}.families", "must name at least one family")
        for fam in families:
            if fam not in FAMILY_OPCODES:
                raise TaskDataError(
                    path, f"{where}.families", f"unknown family {fam!r} (known: {sorted(FAMILY_OPCODES)})"
                )
            if fam in ARCHES[arch].other_tensor_families:
                raise TaskDataError(path, f"{where}.families", f"{fam!r} is not a target family on {arch}")
        targets[arch] = ArchTarget(arch, tuple(families), _opt(spec, "note", str, "", path, f"{where}."))
    if not targets:
        raise TaskDataError(path, "targets", "must name at least one architecture")

    baselines = [
        _load_python(spec, f"baselines[{i}]", path, directory, default_function="run")
        for i, spec in enumerate(_req(extras, "baselines", list, path))
    ]
    if not baselines:
        raise TaskDataError(path, "baselines", "must list at least one library baseline")

    headline = _opt(extras, "headline_workload", str, None, path)
    if headline is not None and headline not in {w.uuid for w in workloads}:
        raise TaskDataError(path, "headline_workload", f"{headline} is not one of the task's workloads")
    packs = _opt(extras, "knowledge_packs", dict, {}, path)
    for arch, pack in packs.items():
        if arch not in ARCHES:
            raise TaskDataError(path, f"knowledge_packs.{arch}", "unknown architecture")
        if not isinstance(pack, str):
            raise TaskDataError(path, f"knowledge_packs.{arch}", "must be a pack id")
    input_generator = None
    gen = _opt(extras, "input_generator", dict, None, path)
    if gen is not None:
        input_generator = _load_python(gen, "input_generator", path, directory, default_function="derive")
    tol = _opt(extras, "tolerance", dict, {}, path)
    atol = float(_opt(tol, "atol", (int, float), DEFAULT_ATOL, path, "tolerance."))
    rtol = float(_opt(tol, "rtol", (int, float), DEFAULT_RTOL, path, "tolerance."))
    rel_norm = _opt(tol, "relative_norm", (int, float), None, path, "tolerance.")
    if rel_norm is not None and not 0 < rel_norm <= 1:
        raise TaskDataError(path, "tolerance.relative_norm", "must be in (0, 1]")
    return Task(
        definition=definition,
        workloads=workloads,
        targets=targets,
        baselines=tuple(baselines),
        flops=flops,
        headline_workload=headline,
        knowledge_packs=dict(packs),
        group=group,
        atol=atol,
        rtol=rtol,
        directory=str(directory),
        input_generator=input_generator,
        rel_norm_bound=float(rel_norm) if rel_norm is not None else None,
    )


def _load_python(spec: Any, where: str, path: Path, directory: Path, *, default_function: str) -> TrustedFunction:
    """Read a {id, name, file, function} entry naming trusted Python code in the task folder."""
    if not isinstance(spec, Mapping):
        raise TaskDataError(path, where, "must be an object")
    file = _req(spec, "file", str, path, f"{where}.")
    if "/" in file or "\\" in file or file.startswith("."):
        raise TaskDataError(path, f"{where}.file", "must be a file name in the task folder")
    source_path = directory / file
    try:
        source = source_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskDataError(path, f"{where}.file", f"{file} does not exist") from None
    function = _opt(spec, "function", str, default_function, path, f"{where}.")
    try:
        module = parse_python(source)
    except SyntaxError as exc:
        raise TaskDataError(source_path, "<python>", f"line {exc.lineno}: {exc.msg}") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == function for n in module.body):
        raise TaskDataError(path, f"{where}.function", f"{file} defines no function {function!r}")
    return TrustedFunction(
        id=_opt(spec, "id", str, where, path, f"{where}."),
        name=_opt(spec, "name", str, file, path, f"{where}."),
        source=source,
        function=function,
    )


# --------------------------------------------------------------------------- loading folders


HIDDEN_WORKLOADS_FILE = "hidden_workloads.jsonl"


def load_task(directory: Path) -> Task:
    """Load one task folder (definition.json, workloads.jsonl, ptxbench.json)."""
    directory = Path(directory)
    def_path = directory / "definition.json"
    definition = parse_definition(read_json(def_path), def_path)
    if definition.name != directory.name:
        raise TaskDataError(def_path, "name", f"{definition.name!r} must match the folder name {directory.name!r}")
    wl_path = directory / "workloads.jsonl"
    try:
        wl_text = wl_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskDataError(wl_path, "<file>", "is missing") from None
    workloads = parse_workloads(wl_text, definition, wl_path)
    if not workloads:
        raise TaskDataError(wl_path, "<file>", "holds no workload")
    extras_path = directory / "ptxbench.json"
    task = parse_task(definition, workloads, read_json(extras_path), extras_path, directory)
    hidden_path = directory / HIDDEN_WORKLOADS_FILE
    if not hidden_path.is_file():
        return task
    hidden = parse_workloads(hidden_path.read_text(encoding="utf-8"), definition, hidden_path)
    clash = {w.uuid for w in hidden} & {w.uuid for w in workloads}
    if clash:
        raise TaskDataError(hidden_path, "uuid", f"{sorted(clash)[0]} is also a public workload")
    return dataclasses.replace(task, hidden_workloads=hidden)


def task_dirs(root: Path) -> list[Path]:
    """Task folders under `root`: every direct subfolder holding a definition.json."""
    return sorted(p for p in Path(root).iterdir() if (p / "definition.json").is_file())


def load_tasks(root: Path) -> list[Task]:
    """Load every task under `root`. Raises on the first malformed file, having loaded nothing else."""
    tasks = [load_task(d) for d in task_dirs(root)]
    names = [t.name for t in tasks]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise TaskDataError(root, "name", f"duplicate task names {sorted(dupes)}")
    return tasks


def find_task(root: Path, name: str) -> Task:
    directory = Path(root) / name
    if not (directory / "definition.json").is_file():
        known = ", ".join(d.name for d in task_dirs(root))
        raise KeyError(f"unknown task {name!r} (known: {known})")
    return load_task(directory)
