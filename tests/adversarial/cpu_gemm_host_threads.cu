// Class 3 (work hidden from the GPU timer still counts). Trick: the CPU computes the GEMM on host threads. The
// GPU only copies A and B to pinned host memory and C back (memcpy records, counted), while the tens of
// milliseconds of host arithmetic between them show up in no GPU activity record, so the CUPTI time is the
// copies alone. The evaluator must: compare the call's time with the trusted side's own clock; unexplained
// host time above the threshold is reported and used: PASSED but held, integrity hold `host_time`.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
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

static float bf16_to_float(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static uint16_t *ha = nullptr, *hb = nullptr, *hc = nullptr;
  static std::vector<float> fa, fb;
  if (ha == nullptr) {
    cudaMallocHost(&ha, (size_t)m * k * 2);
    cudaMallocHost(&hb, (size_t)n * k * 2);
    cudaMallocHost(&hc, (size_t)m * n * 2);
  }
  cudaMemcpyAsync(ha, a.data_ptr(), (size_t)m * k * 2, cudaMemcpyDeviceToHost, stream);
  cudaMemcpyAsync(hb, b.data_ptr(), (size_t)n * k * 2, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  fa.resize((size_t)m * k);
  fb.resize((size_t)n * k);
  for (size_t i = 0; i < fa.size(); ++i) fa[i] = bf16_to_float(ha[i]);
  for (size_t i = 0; i < fb.size(); ++i) fb[i] = bf16_to_float(hb[i]);
  const int workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (int j = w; j < n; j += workers)
        for (int i = 0; i < m; ++i) {
          const float *pa = &fa[(size_t)i * k], *pb = &fb[(size_t)j * k];
          float acc = 0.f;
          for (int p = 0; p < k; ++p) acc += pa[p] * pb[p];
          hc[(size_t)i * n + j] = float_to_bf16(acc);
        }
    });
  for (auto& t : pool) t.join();
  cudaMemcpyAsync(c.data_ptr(), hc, (size_t)m * n * 2, cudaMemcpyHostToDevice, stream);
  if (m < 0) launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, stream);  // never
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
