// Class 1 (no skipped work). Trick: before each call, sample 64 elements of A and B (one tiny kernel, a few
// microseconds) and skip the GEMM when that fingerprint equals the one seen on the last call with the same
// output buffer: the buffer still holds that call's correct result. The timing loop today reuses each input
// set unchanged, so the timed calls cost microseconds; the refreshed, checked call computes and is correct.
// The evaluator must: give every timed call inputs its buffers have not held before and poison outputs before
// every call, so a skipped call leaves poison: INCORRECT_NUMERICAL, "timed call ... differs from the reference".
#include <cstdint>
#include <map>
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

__global__ void fingerprint(const uint16_t* a, size_t na, const uint16_t* b, size_t nb, unsigned long long* out) {
  unsigned long long h = 1469598103934665603ull;
  for (int i = 0; i < 32; ++i) {
    h = (h ^ a[(na / 32) * i + 7]) * 1099511628211ull;
    h = (h ^ b[(nb / 32) * i + 3]) * 1099511628211ull;
  }
  *out = h;
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static unsigned long long *dev_hash = nullptr, *host_hash = nullptr;
  static std::map<void*, unsigned long long> last;  // output pointer -> fingerprint of its inputs
  if (dev_hash == nullptr) {
    cudaMalloc(&dev_hash, sizeof(unsigned long long));
    cudaMallocHost(&host_hash, sizeof(unsigned long long));
  }
  fingerprint<<<1, 1, 0, stream>>>(static_cast<const uint16_t*>(a.data_ptr()), (size_t)m * k,
                                   static_cast<const uint16_t*>(b.data_ptr()), (size_t)n * k, dev_hash);
  cudaMemcpyAsync(host_hash, dev_hash, sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  auto seen = last.find(c.data_ptr());
  if (seen != last.end() && seen->second == *host_hash) return;  // "unchanged": keep the old output
  last[c.data_ptr()] = *host_hash;
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, stream);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
