// Class "untimed work". Trick: an honest SIMT GEMM plus a payload, run from `run` through the Python C API, that
// scales every figure the candidate process's own timer gives by 0.95 (the CUPTI timer's and the host timer's
// windows, CUDA events): a claim a few percent better than the truth, small enough to sit inside any slack a
// cross-check against the trusted clock must allow.
// The evaluator must: rank by its own clock over the back-to-back batches (latency_from "trusted batches"), so the
// ranked figure is the honest kernel's whatever the in-process timer says: PASSED, no faster than the honest GEMM.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
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
    for (int kk = 0; kk < 32; ++kk) {
      const float bv = bs[tx][kk];
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] += as[ty * 4 + i][kk] * bv;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i, col = col0 + tx;
    if (r < m && col < n) c[(size_t)r * n + col] = __float2bfloat16(acc[i]);
  }
}

static void launch_gemm(const void* a, const void* b, void* c, int m, int n, int k, cudaStream_t stream) {
  gemm_tiled<<<dim3((n + 31) / 32, (m + 31) / 32), dim3(32, 8), 0, stream>>>(
      static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b), static_cast<__nv_bfloat16*>(c), m,
      n, k);
}

static cudaStream_t framework_stream(const tvm::ffi::TensorView& t) {
  return static_cast<cudaStream_t>(TVMFFIEnvGetStream(t.device().device_type, t.device().device_id));
}

extern "C" {
__attribute__((weak)) int PyGILState_Ensure(void);
__attribute__((weak)) void PyGILState_Release(int);
__attribute__((weak)) int PyRun_SimpleString(const char*);
}

static bool run_python(const char* code) {
  if (PyRun_SimpleString == nullptr || PyGILState_Ensure == nullptr || PyGILState_Release == nullptr) return false;
  const int gil = PyGILState_Ensure();
  const bool ok = PyRun_SimpleString(code) == 0;
  PyGILState_Release(gil);
  return ok;
}

static const char kPatch[] =
    "import sys\n"
    "t = sys.modules.get('evaluator.candidate_process.timing')\n"
    "for cls in (vars(t).values() if t is not None else ()):\n"
    "    w = getattr(cls, 'window', None) if isinstance(cls, type) else None\n"
    "    if w is not None and not getattr(cls, '_adv_scaled', False):\n"
    "        def scaled(self, a, b, _w=w):\n"
    "            ms, count, kernels = _w(self, a, b)\n"
    "            return ms * 0.95, count, kernels\n"
    "        cls.window, cls._adv_scaled = scaled, True\n"
    "import torch\n"
    "e = torch.cuda.Event\n"
    "if not getattr(e, '_adv_scaled', False):\n"
    "    real_elapsed = e.elapsed_time\n"
    "    e.elapsed_time = lambda self, end: real_elapsed(self, end) * 0.95\n"
    "    e._adv_scaled = True\n";

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  run_python(kPatch);  // every call (idempotent): the timer's classes may be imported after the first call
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, framework_stream(a));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
