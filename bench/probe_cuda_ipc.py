"""Can the trusted parent share GPU buffers with a sandboxed candidate process?

Two ways, each once unsandboxed and once inside the evaluator's bubblewrap jail (its own PID, IPC and network
namespaces, a private /dev/shm):
- legacy CUDA IPC: cudaIpcGetMemHandle in the parent, cudaIpcOpenMemHandle in the child;
- the virtual memory management API with a POSIX file descriptor (evaluator/both_sides/gpu_share.py): the parent creates and
  maps the memory, the child inherits the descriptor, imports and maps it.
The child fills the buffer with 7.0; the parent reads it back. Then the capture cost: a device-to-device copy of
an output (1 MB, 128 MB) into the parent's own memory and a synchronise.

    python3 bench/probe_cuda_ipc.py        (on a GPU host; prints one line per case)
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LEGACY_CHILD = r"""
import ctypes, json, sys, torch
torch.empty(1, device="cuda")
rt = ctypes.CDLL(sys.argv[2])
info = json.load(open(sys.argv[1]))
handle = (ctypes.c_byte * 64).from_buffer_copy(bytes.fromhex(info["handle"]))
ptr = ctypes.c_void_p()
err = rt.cudaIpcOpenMemHandle(ctypes.byref(ptr), handle, 1)
if err:
    print(json.dumps({"opened": False, "error": int(err)})); sys.exit(0)
class View:
    __cuda_array_interface__ = {"shape": (info["n"],), "typestr": "<f4", "data": (ptr.value, False), "version": 3}
torch.as_tensor(View(), device="cuda").fill_(7.0); torch.cuda.synchronize()
print(json.dumps({"opened": True}))
"""

VMM_CHILD = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[3])
from evaluator.both_sides.gpu_share import SharedRegion, tensor_view
torch.empty(1, device="cuda")
region = SharedRegion.open(int(sys.argv[1]), int(sys.argv[2]))
tensor_view(torch, region, 0, [int(sys.argv[2]) // 4], "float32").fill_(7.0)
torch.cuda.synchronize()
print(json.dumps({"opened": True}))
"""


def cudart_path() -> str:
    for line in Path("/proc/self/maps").read_text().splitlines():
        if "libcudart.so" in line:
            return line.split()[-1]
    raise SystemExit("libcudart not loaded by torch")


def main() -> int:
    import torch

    from evaluator.both_sides.gpu_share import SharedRegion, tensor_view
    from evaluator.isolation.jail import open_jail

    torch.empty(1, device="cuda")
    jail = open_jail(allow_unsandboxed=True, gpu=True)
    print(f"jail: {jail.mode} {jail.reason}")
    work = Path(tempfile.mkdtemp(prefix="ipc-probe-"))
    env = jail.env(dict(os.environ))

    def in_jail(argv: list[str], sandboxed: bool, fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess:
        command = jail.command(argv, readable=[work, ROOT], gpu=True) if sandboxed else argv
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, pass_fds=fds)

    # legacy IPC
    path = cudart_path()
    rt = ctypes.CDLL(path)
    n = 1 << 20
    buf = torch.zeros(n, device="cuda")
    handle = (ctypes.c_byte * 64)()
    err = rt.cudaIpcGetMemHandle(ctypes.byref(handle), ctypes.c_void_p(buf.data_ptr()))
    (work / "h.json").write_text(json.dumps({"handle": bytes(handle).hex(), "n": n}))
    (work / "legacy.py").write_text(LEGACY_CHILD)
    for sandboxed in (False, True):
        buf.zero_()
        torch.cuda.synchronize()
        proc = in_jail([sys.executable, str(work / "legacy.py"), str(work / "h.json"), path], sandboxed)
        print(
            f"legacy IPC, {'jail' if sandboxed else 'unsandboxed'}: get {err}, rc {proc.returncode}, child "
            f"{proc.stdout.strip()[-120:]}, parent reads {float(buf[0])}, {float(buf[-1])}"
            + (f"; stderr {proc.stderr.strip()[-300:]}" if proc.returncode else "")
        )

    # VMM + POSIX fd
    (work / "vmm.py").write_text(VMM_CHILD)
    nbytes = 128 << 20
    for sandboxed in (False, True):
        try:
            region = SharedRegion.create(nbytes)
        except Exception as exc:  # noqa: BLE001 - a probe reports every failure
            print(f"VMM create failed: {exc}")
            break
        view = tensor_view(torch, region, 0, [region.size // 4], "float32")
        view.zero_()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        proc = in_jail(
            [sys.executable, str(work / "vmm.py"), str(region.fd), str(region.size), str(ROOT)], sandboxed, (region.fd,)
        )
        took = time.perf_counter() - t0
        torch.cuda.synchronize()
        ok = bool((view == 7.0).all())
        print(
            f"VMM fd, {'jail' if sandboxed else 'unsandboxed'}: rc {proc.returncode}, child "
            f"{proc.stdout.strip()[-120:]}, parent sees all 7.0: {ok} ({took:.2f} s)"
            + (f"; stderr {proc.stderr.strip()[-400:]}" if proc.returncode else "")
        )
        region.close()

    for mb in (1, 128):
        src = torch.empty(mb << 18, device="cuda")
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        torch.cuda.synchronize()
        costs = []
        for _ in range(21):
            t0 = time.perf_counter()
            dst.copy_(src)
            torch.cuda.synchronize()
            costs.append((time.perf_counter() - t0) * 1e3)
        costs.sort()
        print(f"capture {mb} MB device-to-device + synchronise: median {costs[10]:.4f} ms, min {costs[0]:.4f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
