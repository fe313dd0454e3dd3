// Class 1 (no skipped work), in the ranked batches only. Trick: the harness's round routine is patched from inside
// the process to tell the library when a back-to-back batch runs (the rounds that rank; the fastest one counts), and
// the library skips one call in four there, leaving that call's output as the parent poisoned it: a batch 25% shorter
// ranks the kernel 1.33x faster. Every correctness trial and timed call is computed in full. One call a batch is
// compared in full, so with three batches the skip escaped that check about 42% of the time ((3/4)^3), and a
// resubmission tries again. The evaluator must compare every call of every batch on sampled elements taken before
// its clock stops: INCORRECT_NUMERICAL, "of a back-to-back batch differs from the reference".
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

static bool in_batch = false;
static long batch_calls = 0;
extern "C" __attribute__((visibility("default"))) void adv_round(int batch) { in_batch = batch != 0, batch_calls = 0; }
static const char kPatchRound[] =
    "import ctypes, sys\n"
    "_session = sys.modules['__main__'].Session\n"
    "if not getattr(_session, '_adv', False):\n"
    "    _lib = ctypes.CDLL([l.split()[-1] for l in open('/proc/self/maps') if l.rstrip().endswith('.so') and 'kernel' in l.rsplit('/', 1)[-1]][0])\n"
    "    _round = _session.round\n"
    "    def _told(self, receive, round_, kind, calls, sampled):\n"
    "        _lib.adv_round(1 if kind == 'batch' else 0)\n"
    "        try:\n"
    "            _round(self, receive, round_, kind, calls, sampled)\n"
    "        finally:\n"
    "            _lib.adv_round(0)\n"
    "    _session.round, _session._adv = _told, True\n";
void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  static bool patched = false;
  if (!patched) patched = run_python(kPatchRound);
  if (in_batch && ++batch_calls % 4 == 0) return;  // skipped: the output keeps the parent's poison
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, framework_stream(a));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
