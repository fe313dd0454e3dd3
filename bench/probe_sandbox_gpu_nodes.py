"""Does a GPU sandbox pinned to one GPU still run CUDA, with only that GPU's device node bound
(evaluator/isolation/gpu_nodes.py)? And what does the driver's table look like on this host (the CPU tests parse a
copy of it)?

For this host's first GPU (or the pinned one), with CUDA_VISIBLE_DEVICES set to its UUID, this opens the evaluator's
jail and runs, inside it: a listing of /dev/nvidia*, then a bf16 matmul through PyTorch twice, once with the pin and
once with CUDA_VISIBLE_DEVICES removed from the child's environment (what candidate code can do): the device count
and the matmul's result each time. It writes the driver's `information` files and the jail's bind list to --out and
prints one line per check; exit 0 only when every check holds.

    python3 bench/probe_sandbox_gpu_nodes.py [--out DIR]

On a GPU host, from the repo root, with the carried packages installed (scripts/gpu_host_env.sh); under a minute.
On a host of one GPU this shows that the narrowed sandbox works, not that other GPUs are out of reach (there are
none): the CPU test (tests/evaluator/test_sandbox_gpu_nodes.py) shows that on a made-up host of three.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evaluator.isolation import gpu_nodes  # noqa: E402
from evaluator.isolation.jail import open_jail  # noqa: E402
from evaluator.isolation.sandbox import run_group  # noqa: E402

CHILD = """
import os, torch
print("nodes", " ".join(sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))))
print("visible", os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)"))
print("count", torch.cuda.device_count())
a = torch.ones(256, 256, device="cuda", dtype=torch.bfloat16)
print("matmul", float((a @ a)[0, 0]), torch.cuda.get_device_properties(0).uuid)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-out")) / "sandbox-gpu-nodes")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tables = sorted(glob.glob(os.path.join(gpu_nodes.DRIVER_GPUS, "*", "information")))
    for i, path in enumerate(tables):
        (args.out / f"information-{i}.txt").write_text(Path(path).read_text(errors="replace"))
    gpus = gpu_nodes.driver_gpus()
    print(f"driver table: {len(tables)} file(s), {len(gpus)} parsed: {[(g.uuid, g.minor) for g in gpus]}")
    if not gpus:
        print("FAIL no GPU in the driver's table")
        return 1
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES") or gpus[0].uuid
    os.environ["CUDA_VISIBLE_DEVICES"] = pinned
    binds = gpu_nodes.sandbox_gpu_nodes()
    (args.out / "binds.txt").write_text("".join(f"{h} -> {s}\n" for h, s in binds))
    print(f"pinned {pinned}: binds {' '.join(s for _, s in binds)}")
    jail = open_jail(allow_unsandboxed=False, gpu=True)
    ok = True
    for label, env in (
        ("pinned", dict(os.environ)),
        ("pin removed", {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}),
    ):
        run = run_group([sys.executable, "-c", CHILD], timeout_s=120, jail=jail, env=env, gpu=True)
        (args.out / f"child-{label.replace(' ', '-')}.log").write_text(run.output)
        lines = dict(line.split(" ", 1) for line in run.output.splitlines() if " " in line)
        good = run.returncode == 0 and lines.get("count") == "1" and lines.get("matmul", "").startswith("256.0")
        ok = ok and good
        print(
            f"{'ok  ' if good else 'FAIL'} {label}: rc {run.returncode}, {lines.get('nodes', '?')}, "
            f"count {lines.get('count', '?')}, matmul {lines.get('matmul', '?')}"
        )
        if not good:
            print(run.output[-2000:])
    subprocess.run(["sh", "-c", "ls -la /dev/nvidia* > " + str(args.out / "host-dev-nodes.txt")], check=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
