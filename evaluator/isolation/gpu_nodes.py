"""Which NVIDIA device nodes a GPU sandbox is given: the driver's shared nodes, and of the per-GPU nodes only the
one of the GPU the process is pinned to.

A GPU worker pins its GPU by UUID (CUDA_VISIBLE_DEVICES), and every process it starts inherits that, but the
variable is only advice to the CUDA runtime: candidate code that starts a process without it, or calls the driver
itself, reaches every GPU whose node it can open, and can disturb another worker's timing or borrow its GPU. A
sandbox without `/dev/nvidia<other minor>` cannot open those GPUs at all (the sandbox user holds no capability to
make a node, and `nvidia-modprobe` runs without its setuid bit under no_new_privs).

The GPU's minor number comes from the driver's own table, `/proc/driver/nvidia/gpus/<PCI bus id>/information`
(`parse_information` reads one such file). A MIG pin (`MIG-...`) names an instance, not a GPU: the table does not
list it, and such a pin keeps every node (the instance's isolation is the driver's). A GPU pin whose UUID the table
does not list is refused rather than widened to every node.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from evaluator.envinfo import pinned_gpu
from evaluator.errors import EnvironmentProblem

DRIVER_GPUS = "/proc/driver/nvidia/gpus"
DEV_DIR = "/dev"  # where the host's nodes are (a test points both at a made-up host)
# `/dev/nvidia0`, `/dev/nvidia1`, ...: one per GPU. Every other `/dev/nvidia*` entry (nvidiactl, nvidia-uvm,
# nvidia-uvm-tools, nvidia-modeset, the nvidia-caps folder) is the driver's and shared by all GPUs.
_PER_GPU = re.compile(r"nvidia(\d+)")
_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*(.*?)\s*$")


@dataclass(frozen=True)
class DriverGpu:
    """One GPU of the driver's table: its UUID (`GPU-...`, as CUDA_VISIBLE_DEVICES names it) and device minor."""

    uuid: str
    minor: int


def parse_information(text: str) -> DriverGpu | None:
    """The UUID and device minor in one `information` file of the driver; None when either is missing or malformed."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = _FIELD.match(line)
        if match:
            fields.setdefault(match.group(1).lower(), match.group(2))
    uuid = fields.get("gpu uuid", "")
    minor = fields.get("device minor", "")
    if not uuid.startswith("GPU-") or not minor.isdigit():
        return None
    return DriverGpu(uuid=uuid, minor=int(minor))


def driver_gpus() -> list[DriverGpu]:
    """Every GPU the driver lists (none on a machine without the driver)."""
    found = []
    for path in sorted(glob.glob(os.path.join(DRIVER_GPUS, "*", "information"))):
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            continue
        gpu = parse_information(text)
        if gpu is not None:
            found.append(gpu)
    return found


def nodes_for(pinned: str | None, names: Iterable[str], gpus: Iterable[DriverGpu]) -> list[str]:
    """The device nodes to bind, of `names` (the `nvidia*` entries of /dev): all of them when the process is not
    pinned to a GPU, or pinned to a MIG instance; else the shared ones and the pinned GPU's own node only."""
    names = sorted(names)
    if pinned is None or not pinned.startswith("GPU-"):
        return names
    minors = {g.minor for g in gpus if g.uuid.lower() == pinned.lower()}
    if len(minors) != 1:
        raise EnvironmentProblem(
            f"this process is pinned to {pinned}, which the driver's table ({DRIVER_GPUS}) does not list once: "
            "its device node is unknown, so no sandbox is opened with every GPU's node instead"
        )
    (minor,) = minors
    return [n for n in names if (m := _PER_GPU.fullmatch(n)) is None or int(m.group(1)) == minor]


def sandbox_gpu_nodes(environ: Mapping[str, str] = os.environ) -> list[tuple[str, str]]:
    """(host path, path in the sandbox) of each NVIDIA device node a GPU sandbox binds on this host, for the GPU
    this process is pinned to (CUDA_VISIBLE_DEVICES)."""
    pinned = pinned_gpu(environ)
    names = [os.path.basename(p) for p in glob.glob(os.path.join(DEV_DIR, "nvidia*"))]
    kept = nodes_for(pinned, names, driver_gpus() if pinned else ())
    return [(os.path.join(DEV_DIR, n), f"/dev/{n}") for n in kept]


def describe_binding(environ: Mapping[str, str] = os.environ) -> str:
    """The verdict's words for which GPUs a GPU sandbox could open (its sandbox record's `gpu_devices`)."""
    pinned = pinned_gpu(environ)
    if pinned is None:
        return "not enforced: not pinned to one GPU by UUID, so every /dev/nvidia* node was bound"
    if not pinned.startswith("GPU-"):
        return f"not enforced: pinned to MIG instance {pinned}, every /dev/nvidia* node bound"
    try:
        per_gpu = [s for _, s in sandbox_gpu_nodes(environ) if _PER_GPU.fullmatch(os.path.basename(s))]
    except EnvironmentProblem as exc:  # the sandbox was refused for the same reason: no GPU process ran
        return f"not enforced: {exc}"
    return f"{' '.join(per_gpu)} of {pinned} only, beside the driver's shared nodes (bubblewrap binds)"
