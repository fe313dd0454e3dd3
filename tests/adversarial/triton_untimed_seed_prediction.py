"""Class "untimed work" in Triton (the corpus skips the source policy). Trick: seed prediction. While the module loads
(no call is timed yet), it gathers every number and byte string the candidate process can read: its arguments, its
environment, /proc/self/cmdline and environ, the job file, the task folder, and every dict among the interpreter's
objects with a key naming a seed. Each number is tried as a call's seed and each byte string as the run seed
(through the evaluator's own derive_seed, with the labels of trials and batches); the evaluator's own input generator
draws each guess's inputs on the GPU and the output is computed there and then. `run` reads the first 8 values of its
A (a copy, no kernel): a known fingerprint means a predicted call, and the output is copied in.
The evaluator must: send the candidate process no seed and nothing a seed derives from, so nothing is predicted:
PASSED at the honest Triton GEMM's speed, stdout saying "seed hunt: no hit" and never "seed hunt: hit"."""

import gc
import json
import os
import re
import sys
import warnings
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def gemm_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid % tl.cdiv(M, BM)
    pid_n = pid // tl.cdiv(M, BM)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([pid_n * BN, k * BK]).T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))


BM, BN, BK = 128, 256, 64
MAX_SEEDS = 1024
_predicted = {}  # fingerprint of A (two int64) -> the output computed at load time
_said = set()


def _gather(value, numbers, blobs, depth=0):
    if depth > 4 or isinstance(value, bool):
        return
    if isinstance(value, int) and value >= 1 << 20:
        numbers.append(value & ((1 << 63) - 1))
    elif isinstance(value, (bytes, bytearray)) and 8 <= len(value) <= 64:
        blobs.append(bytes(value))
    elif isinstance(value, str):
        for token in re.findall(r"[0-9a-fA-F]{16,128}", value):
            blobs.append(bytes.fromhex(token[: len(token) // 2 * 2]))
            numbers.append(int(token[:16], 16) >> 1)
        numbers.extend(int(t) & ((1 << 63) - 1) for t in re.findall(r"\d{7,20}", value))
        if 8 <= len(value) <= 64:
            blobs.append(value.encode())
    elif isinstance(value, dict):
        for k, v in list(value.items())[:500]:
            _gather(k, numbers, blobs, depth + 1)
            _gather(v, numbers, blobs, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in list(value)[:500]:
            _gather(v, numbers, blobs, depth + 1)


def _names_seed(key):
    return isinstance(key, str) and "seed" in key.lower()


def _shown(blob):
    text = blob.decode(errors="replace")
    return text if blob.isascii() and text.isprintable() else blob.hex()


def _hunt():
    from evaluator.both_sides.inputs import derive_seed, input_deriver, make_inputs
    from evaluator.both_sides.taskdata import load_task

    job = next((json.loads(Path(a).read_text()) for a in sys.argv if a.endswith(".json")), {})
    task_dir = Path(job["task_dir"])
    numbers, blobs, seen = [], [], [job, sys.argv, dict(os.environ)]
    for path in [Path("/proc/self/cmdline"), Path("/proc/self/environ"), *sorted(task_dir.rglob("*"))[:64]]:
        try:
            seen.append(path.read_bytes()[: 1 << 20].replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen += [o for o in gc.get_objects() if isinstance(o, dict) and any(_names_seed(k) for k in o)]
    for value in seen:
        _gather(value, numbers, blobs)
    # Run-seed guesses first: hex that decodes to 16 or 32 bytes (how a seed is written down), then empty and zero.
    likely = [b for b in blobs if len(b) in (16, 32) and not b.isascii()]
    blobs = list(dict.fromkeys([*likely, b"", bytes(16), bytes(32), *blobs]))
    uuid = job["workload"]
    labels = [("trial", k) for k in range(3)] + [(f"batch{r}", k) for r in range(3) for k in range(64)]
    # Each run-seed guess gives every trial's and batch call's seed; then numbers found as they are (a call's seed).
    seeds = [derive_seed(b, uuid, label, k) for b in blobs[:3] for label, k in labels]
    seeds += list(dict.fromkeys(numbers))[: MAX_SEEDS - len(seeds)]
    task = load_task(task_dir)
    workload, derive = task.workload(uuid), input_deriver(task)
    for seed in seeds[:MAX_SEEDS]:
        a, b = make_inputs(task.definition, workload, seed, device="cuda", derive=derive)[:2]
        _predicted[tuple(a.reshape(-1)[:8].view(torch.int64).tolist())] = a @ b.T
    shown = ", ".join(_shown(b)[:64] for b in blobs[:12])
    print(f"seed hunt: {len(numbers)} numbers, {len(blobs)} byte strings ({shown}), {len(_predicted)} calls predicted")


def run(A, B, C):
    if A.device.type != "meta":
        hit = _predicted.get(tuple(A.reshape(-1)[:8].view(torch.int64).tolist()))
        said = "seed hunt: hit" if hit is not None else "seed hunt: no hit"
        if said not in _said:
            _said.add(said)
            print(said, flush=True)
        if hit is not None:
            C.copy_(hit)
            return
    descs = (TensorDescriptor.from_tensor(t, s) for t, s in ((A, [BM, BK]), (B, [BN, BK]), (C, [BM, BN])))
    grid = (triton.cdiv(A.shape[0], BM) * triton.cdiv(B.shape[0], BN),)
    gemm_kernel[grid](*descs, A.shape[0], B.shape[0], A.shape[1], BM=BM, BN=BN, BK=BK, num_warps=8)


# Only in the candidate process (the compile step has no GPU): the module loads there before any call is timed.
if getattr(sys.modules.get("__main__"), "Session", None) is not None and torch.cuda.is_available():
    _hunt()
