// Class "untimed work". Trick: seed prediction. While the library loads (a static initialiser, through the Python
// C API: no call is timed yet), Python gathers every number and byte string the candidate process can read: its
// arguments, its environment, /proc/self/cmdline and environ, the job file, the task folder, and every dict among
// the interpreter's objects with a key naming a seed. Each number is tried as a call's seed and each byte string as
// the run seed (through the evaluator's own derive_seed, with the labels of trials and batches); the evaluator's
// own input generator draws each guess's inputs on the GPU and the output is computed there and then. `run` reads
// the first 8 values of its A (a copy, no kernel): a known fingerprint means a predicted call, copied in.
// The evaluator must: send the candidate process no seed and nothing a seed derives from, so nothing is predicted:
// PASSED at the honest SIMT GEMM's speed, stdout saying "seed hunt: no hit" and never "seed hunt: hit".
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

// Honest tiled SIMT GEMM (as tests/kernels/simt_gemm.cu): C[M,N] = A[M,K] @ B[N,K]^T, bf16 in, fp32 accumulate.
__global__ void gemm_tiled(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                           __nv_bfloat16* __restrict__ c, int m, int n, int k) {
  __shared__ float as[32][33], bs[32][33];
  const int tx = threadIdx.x, ty = threadIdx.y, row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < k; k0 += 32) {
    for (int r = ty; r < 32; r += 8) {
      const int ak = k0 + tx;
      as[r][tx] = (row0 + r < m && ak < k) ? __bfloat162float(a[(size_t)(row0 + r) * k + ak]) : 0.f;
      bs[r][tx] = (col0 + r < n && ak < k) ? __bfloat162float(b[(size_t)(col0 + r) * k + ak]) : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < 32; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] += as[ty * 4 + i][kk] * bs[tx][kk];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i, col = col0 + tx;
    if (r < m && col < n) c[(size_t)r * n + col] = __float2bfloat16(acc[i]);
  }
}

extern "C" {
__attribute__((weak)) int PyGILState_Ensure(void);
__attribute__((weak)) void PyGILState_Release(int);
__attribute__((weak)) int PyRun_SimpleString(const char*);
}

// Function-local: the load-time hunt (a constructor) runs before namespace-scope statics are built.
static std::map<std::pair<int64_t, int64_t>, const void*>& predicted() {
  static std::map<std::pair<int64_t, int64_t>, const void*> table;  // fingerprint of A -> its output
  return table;
}
static void add_prediction(int64_t k0, int64_t k1, const void* c) { predicted()[{k0, k1}] = c; }

static const char kHunt[] = R"PY(
import ctypes, gc, json, os, re, sys, warnings
from pathlib import Path

import torch

MAX_SEEDS = 1024
_predicted = {}  # fingerprint of A (two int64) -> the output computed at load time, kept alive here
_add = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)(ADD_ADDRESS)


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
        c = a @ b.T
        key = a.reshape(-1)[:8].view(torch.int64).tolist()
        _predicted[tuple(key)] = c
        _add(key[0], key[1], c.data_ptr())
    shown = ", ".join(_shown(b)[:64] for b in blobs[:12])
    print(f"seed hunt: {len(numbers)} numbers, {len(blobs)} byte strings ({shown}), {len(_predicted)} calls predicted")


_job = next((json.loads(Path(a).read_text()) for a in sys.argv if a.endswith(".json")), {})
if _job.get("mode") != "profile" and torch.cuda.is_available():
    _hunt()
)PY";

__attribute__((constructor)) static void hunt_at_load() {
  if (PyRun_SimpleString == nullptr || PyGILState_Ensure == nullptr || PyGILState_Release == nullptr) return;
  const std::string code = "ADD_ADDRESS = " + std::to_string((uintptr_t)&add_prediction) + "\n" + kHunt;
  const int gil = PyGILState_Ensure();
  PyRun_SimpleString(code.c_str());
  PyGILState_Release(gil);
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(a.device().device_type, a.device().device_id));
  int64_t key[2];
  cudaMemcpy(key, a.data_ptr(), sizeof key, cudaMemcpyDeviceToHost);
  const auto hit = predicted().find({key[0], key[1]});
  static bool said[2] = {false, false};
  if (!said[hit != predicted().end()]) {
    said[hit != predicted().end()] = true;
    std::printf(hit != predicted().end() ? "seed hunt: hit\n" : "seed hunt: no hit\n");
    std::fflush(stdout);
  }
  if (hit != predicted().end()) {
    cudaMemcpyAsync(c.data_ptr(), hit->second, (size_t)m * n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToDevice, stream);
    return;
  }
  gemm_tiled<<<dim3((n + 31) / 32, (m + 31) / 32), dim3(32, 8), 0, stream>>>(
      static_cast<const __nv_bfloat16*>(a.data_ptr()), static_cast<const __nv_bfloat16*>(b.data_ptr()),
      static_cast<__nv_bfloat16*>(c.data_ptr()), m, n, k);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
