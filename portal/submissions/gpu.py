"""What GPU is on this host, read with nvidia-smi so the worker process itself never initialises CUDA."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from evaluator.both_sides.arches import Arch, arch_for_capability


@dataclass(frozen=True)
class GpuInfo:
    index: str
    name: str
    uuid: str
    driver_version: str
    compute_capability: tuple[int, int]

    @property
    def arch(self) -> Arch | None:
        return arch_for_capability(*self.compute_capability)


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """Parse `nvidia-smi --query-gpu=index,name,uuid,driver_version,compute_cap --format=csv,noheader`."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5 or not parts[0].isdigit():
            continue
        try:
            major, minor = (int(x) for x in parts[4].split("."))
        except ValueError:
            continue
        gpus.append(GpuInfo(parts[0], parts[1], parts[2], parts[3], (major, minor)))
    return gpus


def detect_gpus() -> list[GpuInfo]:
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return []
    result = subprocess.run(
        [binary, "--query-gpu=index,name,uuid,driver_version,compute_cap", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return parse_nvidia_smi(result.stdout) if result.returncode == 0 else []
