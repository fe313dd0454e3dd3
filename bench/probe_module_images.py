"""Can the parent tell a timed kernel's module by its code? The identity check of a timed call (class 2) reads
CUPTI's kernel records, which name a kernel and give its footprint but not its module; a module loaded at run time
can forge both (docs/threat-model.md, class 5). CUPTI's MODULE activity records carry each loaded module's image
(`cubin`, `cubin_size`) and its FUNCTION records map every function to a module id. If the image of a module the
submission's build loads is byte for byte the device ELF the trusted side extracted from that build (the cubin the
static SASS counted), then the parent can require that every module defining a launched submission name is one of
those images.

For each case this compiles the source through the evaluator (policy, compile, sass; the build folder kept), hashes
every device ELF the trusted side has for it (the extracted cubin, Triton's cubins, `cuobjdump -xelf all` of the
library), then runs one call in a child process with MODULE, FUNCTION and CONCURRENT_KERNEL activity enabled, the
way the candidate process enables its timer, and prints every module the call loaded: id, size, the image's first
bytes and sha256, whether it is one of the build's ELFs, and the functions it defines that were launched.

On an H100 (2026-12-06, driver 580.159.04, cupti-python 13.4.0; docs/runs/integrity/h100-2026-12-06b/probe/) CUPTI
refused the MODULE activity kind (`activity_enable`: ERROR_INVALID_KIND), so no image came that way. The child now
also subscribes to the resource domain's MODULE_LOADED callback, whose `CUpti_ModuleResourceData` points at the
image while the callback runs, and reports which routes it could enable.

    python3 bench/probe_module_images.py [--out DIR]

On the GPU host, from the repo root, with the carried packages installed (scripts/gpu_host_env.sh); about two minutes.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CASES = (
    ("cuda expert gemm", "gemm_n7168_k5120", "tasks/gemm_n7168_k5120/solutions/hopper_tma_wgmma/kernel.cu", "cuda"),
    (
        "cuda fp8 gemm",
        "gemm_fp8_n7168_k5120",
        "tasks/gemm_fp8_n7168_k5120/solutions/hopper_tma_wgmma_fp8/kernel.cu",
        "cuda",
    ),
    ("triton gemm", "gemm_n4096_k4096", "tasks/gemm_n4096_k4096/solutions/triton_tma_wgmma/kernel.py", "triton"),
    ("module loaded same name", "gemm_n7168_k5120", "tests/adversarial/module_loaded_same_name.cu", "cuda"),
    ("module forged footprint", "gemm_n7168_k5120", "tests/adversarial/module_forged_footprint.cu", "cuda"),
)


def trusted_images(workdir: Path, library: Path | None) -> dict[str, str]:
    """sha256 -> where, of every device ELF the trusted side has for this build."""
    from evaluator.build.compile import find_cuobjdump

    found: dict[str, str] = {}
    for cubin in sorted(workdir.rglob("*.cubin")):
        found.setdefault(hashlib.sha256(cubin.read_bytes()).hexdigest(), str(cubin.relative_to(workdir)))
    if library is not None:
        out = Path(tempfile.mkdtemp(prefix="xelf-"))
        subprocess.run([find_cuobjdump(), "-xelf", "all", str(library)], cwd=out, capture_output=True, check=False)
        for elf in sorted(out.iterdir()):
            found.setdefault(hashlib.sha256(elf.read_bytes()).hexdigest(), f"xelf:{elf.name}")
    return found


def parent(out: Path | None) -> int:
    from evaluator import pipeline
    from evaluator.both_sides.taskdata import find_task
    from evaluator.pipeline import Options

    rows = []
    for label, task_name, rel, language in CASES:
        task = find_task(REPO / "tasks", task_name)
        workdir = Path(tempfile.mkdtemp(prefix="probe-images-"))
        v = pipeline.evaluate(
            (REPO / rel).read_text(),
            task,
            "sm_90a",
            stages=["policy", "compile", "sass"],
            options=Options(workdir=workdir, keep_workdir=True),
            language=language,
        )
        libraries = [p for p in workdir.rglob("*.so") if "cache" not in p.parts]
        library = libraries[0] if language == "cuda" and libraries else None
        caches = [p for p in workdir.rglob("*") if p.is_dir() and p.name == "triton-cache"]
        images = trusted_images(workdir, library)
        child_job = {
            "task": task_name,
            "language": language,
            "library": str(library) if library else str(REPO / rel),
            "kernel_cache": str(caches[0]) if caches else None,
        }
        proc = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(child_job)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        seen = None
        for line in proc.stdout.splitlines():
            if line.startswith("MODULES "):
                seen = json.loads(line[len("MODULES ") :])
        row: dict[str, Any] = {
            "case": label,
            "status": v.status.value,
            "compile_cubin_sha256": v.compile.cubin_sha256 if v.compile else None,
            "trusted_images": images,
            "child_rc": proc.returncode,
            "child_err": proc.stderr[-1500:] if proc.returncode else "",
            "child": seen,
        }
        if seen:
            launched = set(seen["launched"])
            for m in seen["modules"]:
                m["trusted"] = images.get(m["sha256"] or "", None)
                m["defines_launched"] = sorted(n for mid, n in seen["functions"] if mid == m["id"] and n in launched)
                text = m["text"] if isinstance(m["text"], list) else []
                m["text_launched"] = sorted(n for n in text if n in launched)
        rows.append(row)
        print(f"== {label}: {row['status']}, child rc {proc.returncode}, {len(images)} trusted ELF(s)")
        for h, where in images.items():
            print(f"   trusted {h[:16]} {where}")
        if seen:
            for m in seen["modules"]:
                if m["defines_launched"] or m["text_launched"] or m["trusted"]:
                    print(
                        f"   {m['route']} module {m['id']} size {m['size']} head {m['head']} sha {str(m['sha256'])[:16]} "
                        f"trusted={m['trusted']} defines={m['defines_launched'][:3]} text={m['text_launched'][:3]}"
                    )
            print(
                f"   modules loaded {len(seen['modules'])}, functions {len(seen['functions'])}, "
                f"launched {sorted(launched)[:4]}, routes {seen.get('routes')}, error {seen.get('error')}"
            )
        else:
            print("   " + row["child_err"].replace("\n", "\n   ")[-800:])
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "module-images.json").write_text(json.dumps(rows, indent=1))
    return 0


def text_sections(data: bytes) -> list[str] | str:
    """The functions an image defines, by its `.text.<name>` sections: a second route from a launched name to the
    module that holds it, should CUPTI's FUNCTION records not come."""
    from evaluator.binaries.elf_layout import ElfError, read_layout

    if data[:4] != b"\x7fELF":
        return "not an ELF image"
    try:
        layout = read_layout(data)
    except ElfError as exc:
        return f"unreadable: {exc}"[:200]
    return [s.name[6:].decode(errors="replace") for s in layout.sections if s.name.startswith(b".text.")][:64]


def child(job: dict[str, Any]) -> int:
    import torch
    from cupti import cupti

    from evaluator.both_sides.inputs import alloc_outputs, make_inputs
    from evaluator.both_sides.taskdata import find_task
    from evaluator.candidate_process.timing import module_image_bytes

    torch.empty(1, device="cuda")
    modules: list[dict[str, Any]] = []
    functions: list[tuple[int, str]] = []
    launched: list[str] = []
    routes: dict[str, str] = {}

    def describe(route: str, module_id: int, size: int, data: bytes) -> None:
        modules.append(
            {
                "route": route,
                "id": module_id,
                "size": size,
                "head": data[:4].hex(),
                "sha256": hashlib.sha256(data).hexdigest() if data else None,
                "text": text_sections(data),
            }
        )

    def requested() -> tuple[int, int]:
        return 8 * 1024 * 1024, 0

    def completed(activities: list[Any]) -> None:
        for a in activities:
            if a.kind == cupti.ActivityKind.MODULE:
                size, address = int(a.cubin_size), int(a.cubin or 0)
                describe("activity", int(a.id), size, ctypes.string_at(address, size) if address and size else b"")
            elif a.kind == cupti.ActivityKind.FUNCTION:
                functions.append((int(a.module_id), str(a.name)))
            elif a.kind == cupti.ActivityKind.CONCURRENT_KERNEL:
                launched.append(str(a.name))

    def on_resource(userdata: Any, domain: Any, cbid: Any, data: Any) -> None:
        # Read by the evaluator's own reader, the one the candidate process records images with.
        if cbid != cupti.CallbackIdResource.MODULE_LOADED:
            return
        routes["callback data type"] = type(data).__name__
        module_id, image = module_image_bytes(data)
        describe("callback", module_id, len(image), image)

    cupti.activity_register_callbacks(requested, completed)
    for kind in (cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.FUNCTION, cupti.ActivityKind.MODULE):
        try:
            cupti.activity_enable(kind)
            routes[f"activity {kind.name}"] = "enabled"
        except Exception as exc:  # noqa: BLE001 - the finding itself (MODULE: ERROR_INVALID_KIND on 2026-12-06)
            routes[f"activity {kind.name}"] = f"{type(exc).__name__}: {exc}"
    try:
        subscriber = cupti.subscribe(on_resource, None)
        cupti.enable_callback(1, subscriber, cupti.CallbackDomain.RESOURCE, cupti.CallbackIdResource.MODULE_LOADED)
        routes["callback MODULE_LOADED"] = "enabled"
    except Exception as exc:  # noqa: BLE001 - reported
        routes["callback MODULE_LOADED"] = f"{type(exc).__name__}: {exc}"
    error = None
    try:
        task = find_task(REPO / "tasks", job["task"])
        workload = min(task.workloads, key=lambda w: sum(int(v) for v in w.axes.values() if isinstance(v, int)))
        if job["language"] == "cuda":
            from evaluator.candidate_process import tvm_ffi_library as loader
        else:
            from evaluator.candidate_process import triton_runtime as loader  # type: ignore[no-redef]
        loader.prepare()
        cache = Path(job["kernel_cache"]) if job["kernel_cache"] else None
        _module, run = loader.load(Path(job["library"]), cache)
        inputs = make_inputs(task.definition, workload, 1234, device="cuda")
        outputs = alloc_outputs(task.definition, workload, device="cuda")
        run(*inputs, *outputs)
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the records so far still tell something
        error = f"{type(exc).__name__}: {exc}"[:500]
    cupti.activity_flush_all(1)
    result = {"routes": routes, "modules": modules, "functions": functions, "launched": launched, "error": error}
    print("MODULES " + json.dumps(result))
    sys.stdout.flush()
    os._exit(0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child:
        return child(json.loads(args.child))
    return parent(args.out)


if __name__ == "__main__":
    sys.exit(main())
