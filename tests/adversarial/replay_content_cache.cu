// Class 1 (no replayed work). Trick: a content-keyed replay cache (flashinfer-bench-starter-kit#21 style).
// A hash over a strided sample of A and B (64 K elements, one small kernel) keys a cache of device copies of
// earlier outputs, whatever buffer they came in: on a hit the cached C is copied out (a 1.8 MB memcpy) instead
// of computing. Unlike a pointer cache it survives a harness that rotates a fixed pool of input sets through
// fresh buffers, or replays the same seeds. The evaluator must: never show a timed call inputs seen before
// (regenerated from fresh seeds), so the cache never hits and the kernel is timed at its honest speed (PASSED,
// latency far above a memcpy), or, if it still hits, a checked timed call fails: INCORRECT_NUMERICAL.
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

__global__ void sample_hash(const uint32_t* a, size_t na, const uint32_t* b, size_t nb, unsigned long long* out) {
  __shared__ unsigned long long part[256];
  unsigned long long h = 0;
  for (int i = threadIdx.x; i < 32768; i += blockDim.x) {
    const unsigned long long x = a[(na / 32768) * i], y = b[(nb / 32768) * i];
    h += (x * 0x9E3779B97F4A7C15ull + i) ^ (y * 0xC2B2AE3D27D4EB4Full + (i << 20));
  }
  part[threadIdx.x] = h;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long t = 0;
    for (int i = 0; i < 256; ++i) t = t * 31 + part[i];
    *out = t;
  }
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  const size_t bytes = (size_t)m * n * sizeof(__nv_bfloat16);
  static unsigned long long *dev_hash = nullptr, *host_hash = nullptr;
  static std::map<unsigned long long, void*> cache;  // content hash -> device copy of the output
  if (dev_hash == nullptr) {
    cudaMalloc(&dev_hash, sizeof(unsigned long long));
    cudaMallocHost(&host_hash, sizeof(unsigned long long));
  }
  sample_hash<<<1, 256, 0, stream>>>(static_cast<const uint32_t*>(a.data_ptr()), (size_t)m * k / 2,
                                     static_cast<const uint32_t*>(b.data_ptr()), (size_t)n * k / 2, dev_hash);
  cudaMemcpyAsync(host_hash, dev_hash, sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  auto hit = cache.find(*host_hash);
  if (hit != cache.end()) {
    cudaMemcpyAsync(c.data_ptr(), hit->second, bytes, cudaMemcpyDeviceToDevice, stream);
    return;
  }
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, stream);
  if (cache.size() < 64) {
    void* saved = nullptr;
    if (cudaMalloc(&saved, bytes) == cudaSuccess) {
      cudaMemcpyAsync(saved, c.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream);
      cache.emplace(*host_hash, saved);
    }
  }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
