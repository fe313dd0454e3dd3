"""Class "untimed work" in Triton (the corpus skips the source policy). Trick: the stash-and-copy of
triton_untimed_stash_copy.py with the stash computed by the library (torch.matmul, cuBLAS) instead of the
submission's kernel: the fastest GEMM there is, launched by the watcher thread while the harness waits for `go`, so
it can finish in the gaps the parent leaves while it draws the next slots. No call window holds a library kernel
unless the stash is late; `run` launches only the submission's kernels (copy, or the honest GEMM on a mismatch).
The evaluator must: start its clock before any input exists in a slot, so the stashed work is inside the span
whichever kernel does it: PASSED no faster than the library itself (or a foreign kernel or wrong output caught)."""

import threading
import time

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def gemm_kernel(a_desc, b_desc, c_desc, skip_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    if tl.load(skip_ptr, volatile=True) == 0:
        pid = tl.program_id(0)
        pid_m = pid % tl.cdiv(M, BM)
        pid_n = pid // tl.cdiv(M, BM)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([pid_n * BN, k * BK]).T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))


# A slot's 8 samples, as offsets into the lent region: A first/mid/last, B first/mid/last, A first, C first.
@triton.jit
def poll_kernel(region, table, out):
    j = tl.program_id(0) * 8 + tl.arange(0, 8)
    tl.store(out + j, tl.load(region + tl.load(table + j), volatile=True))


@triton.jit
def seal_kernel(region, offsets, expect):
    j = tl.arange(0, 8)
    tl.store(expect + j, tl.load(region + tl.load(offsets + j), volatile=True))


@triton.jit
def copy_or_flag(region, offsets, expect, stash, c, skip, n, BLOCK: tl.constexpr):
    j = tl.arange(0, 8)
    now = tl.load(region + tl.load(offsets + j), volatile=True)
    differ = tl.sum(((now != tl.load(expect + j, volatile=True)) & (j < 7)).to(tl.int32), axis=0)
    if tl.program_id(0) == 0:
        tl.store(skip, (differ == 0).to(tl.int32))
    if differ == 0:
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(c + i, tl.load(stash + i, mask=i < n), mask=i < n)


BM, BN, BK, COPY_BLOCK = 128, 256, 64, 4096
_lock = threading.Lock()
_slots = []  # dicts sorted by the address of A: the parent's slot order
_state = {"seq": 0, "region": None, "table": None, "zero": None}


def _gemm(A, B, C, skip):
    descs = (TensorDescriptor.from_tensor(t, s) for t, s in ((A, [BM, BK]), (B, [BN, BK]), (C, [BM, BN])))
    grid = (triton.cdiv(A.shape[0], BM) * triton.cdiv(B.shape[0], BN),)
    gemm_kernel[grid](*descs, skip, A.shape[0], B.shape[0], A.shape[1], BM=BM, BN=BN, BK=BK, num_warps=8)


def _copy(region, offsets, expect, stash, C, skip):
    copy_or_flag[(triton.cdiv(C.numel(), COPY_BLOCK),)](region, offsets, expect, stash, C, skip, C.numel(), COPY_BLOCK)


def _watch(device):
    stream = torch.cuda.Stream(device)
    with torch.cuda.device(device), torch.cuda.stream(stream):
        out = torch.empty(64 * 8, dtype=torch.int16, device=device)
        while True:
            time.sleep(2e-5)
            with _lock:
                n, launched, region, table = len(_slots), _state["seq"], _state["region"], _state["table"]
            if n == 0:
                continue
            poll_kernel[(n,)](region, table, out)
            flat = out[: 8 * n].tolist()
            fp = [flat[8 * i : 8 * i + 8] for i in range(n)]
            with _lock:
                if len(_slots) != n:
                    continue  # a slot was learned meanwhile: the indices moved
                for x, f in zip(
                    _slots, fp, strict=True
                ):  # a call's output seen written, then poisoned again: a new round
                    nan = (f[7] & 0x7F80) == 0x7F80 and (f[7] & 0x7F) != 0
                    if x["needs_clear"] and not nan and launched >= x["clear_seq"]:
                        x["needs_clear"] = False
                    elif not x["needs_clear"] and not x["armed"] and nan:
                        x.update(armed=True, stashed=False, armed_fp=f)
                for i in range(n - 1):  # slot i+1's A began to change: slot i is drawn in full
                    x, nxt = _slots[i], _slots[i + 1]
                    if x["armed"] and not x["stashed"] and nxt["armed"] and fp[i + 1][:3] != nxt["armed_fp"][:3]:
                        torch.matmul(x["A"], x["B"].T, out=x["stash"])
                        seal_kernel[(1,)](region, x["offsets"], x["expect"])
                        x["done"].record(stream)
                        x["stashed"] = True


def _learn(A, B, C):
    """The slot of this call (None when its tensors are not views of the lent region), under the lock."""
    storage = A.untyped_storage()
    if _state["region"] is None:
        _state["region"] = torch.empty(0, dtype=torch.int16, device=A.device).set_(storage, 0, (storage.nbytes() // 2,))
        _state["zero"] = torch.tensor([0], dtype=torch.int32, device=A.device)
        threading.Thread(target=_watch, args=(A.device,), daemon=True).start()
    if storage.data_ptr() != _state["region"].data_ptr() or any(
        t.untyped_storage().data_ptr() != storage.data_ptr() for t in (B, C)
    ):
        return None
    for x in _slots:
        if x["C"].data_ptr() == C.data_ptr():
            return x
    if len(_slots) == 64:
        return None
    a, b = A.storage_offset(), B.storage_offset()
    offsets = [
        a,
        a + A.numel() // 2,
        a + A.numel() - 1,
        b,
        b + B.numel() // 2,
        b + B.numel() - 1,
        a,
        C.storage_offset(),
    ]
    x = {
        "A": A,
        "B": B,
        "C": C,
        "stash": torch.empty_like(C),
        "done": torch.cuda.Event(),
        "armed": False,
        "stashed": False,
        "needs_clear": True,
        "clear_seq": 0,
        "armed_fp": [],
        "offsets": torch.tensor(offsets, dtype=torch.int64, device=A.device),
        "host_offsets": offsets,
        "skip": torch.tensor([0], dtype=torch.int32, device=A.device),
        "expect": torch.tensor([-1] * 8, dtype=torch.int16, device=A.device),
    }
    _slots.append(x)
    _slots.sort(key=lambda s: s["A"].data_ptr())
    # Built from host lists: a copy, no kernel (a call may launch nothing but the submission's kernels)
    _state["table"] = torch.tensor([o for s in _slots for o in s["host_offsets"]], dtype=torch.int64, device=A.device)
    return x


def run(A, B, C):
    if A.device.type == "meta":  # the compile step: every kernel the thread and the copy use, once
        region = torch.empty(1 << 20, dtype=torch.int16, device="meta")
        idx = torch.empty(8, dtype=torch.int64, device="meta")
        i16 = torch.empty(8, dtype=torch.int16, device="meta")
        skip = torch.empty(1, dtype=torch.int32, device="meta")
        _gemm(A, B, C, skip)
        poll_kernel[(1,)](region, idx, i16)
        seal_kernel[(1,)](region, idx, i16)
        _copy(region, idx, i16, torch.empty_like(C), C, skip)
        return
    with _lock:
        x = _learn(A, B, C)
        wait = x is not None and x["stashed"]
        if x is not None:
            _state["seq"] += 1
            x.update(armed=False, stashed=False, needs_clear=True, clear_seq=_state["seq"])
    skip = _state["zero"]
    if wait:
        torch.cuda.current_stream().wait_event(x["done"])
        skip = x["skip"]
        _copy(_state["region"], x["offsets"], x["expect"], x["stash"], C, skip)
    _gemm(A, B, C, skip)
