// Class 4 (nothing measured only by the candidate's process; pygpubench's gc-scan exploit). Trick: no module is
// patched; the harness's own objects are. During the calls `run` walks gc.get_objects() for the harness's
// session (its type is named Session) and wraps that object's timer so every window it measures reads a tenth,
// so the samples are shrunk as they are summed. Honest SIMT GEMM, correct outputs. The evaluator must: rank on
// its own clock, hold `host_time` (or `timer_disagreement`: the parent's clock and Nsight Compute disagree with
// the in-process samples beyond the margin).
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
// Weak references to the Python C API: resolved at load time against the interpreter that hosts the candidate
// (no dlsym); null where there is no Python in the process.
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

static const char kScan[] =
    "def _adv_scan():\n"
    "    import gc\n"
    "\n"
    "    for o in gc.get_objects():\n"
    "        try:\n"
    "            if type(o).__name__ == 'Session' and getattr(o, 'timer', None) is not None:\n"
    "                timer = o.timer\n"
    "                if not getattr(timer, '_adv', False):\n"
    "                    real = timer.window\n"
    "                    def shrunk(t0, t1, _real=real):\n"
    "                        ms, count, launches = _real(t0, t1)\n"
    "                        return ms / 10, count, launches\n"
    "                    timer.window, timer._adv = shrunk, True\n"
    "        except Exception:\n"
    "            pass\n"
    "_adv_scan()\n";

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  static long calls = 0;
  if (calls++ % 4 == 0) run_python(kScan);  // host time only: the GPU timer does not see it
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, framework_stream(a));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
