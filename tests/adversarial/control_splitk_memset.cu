// Honest control (must PASS, arch `absent`): split-K with a memset. A fp32 workspace is cleared with
// cudaMemsetAsync, four K-slices accumulate into it with atomicAdd, and a second kernel converts it to bf16.
// Every launch (memset included) is the submission's own and on the framework stream; the integrity checks must
// count the memset and must not call this foreign, skipped or hidden work.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

constexpr int kSplit = 4;

__global__ void gemm_splitk(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                            float* __restrict__ ws, int m, int n, int k) {
  __shared__ float as[32][33], bs[32][33];
  const int tx = threadIdx.x, ty = threadIdx.y, row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  const int slice = (k + kSplit - 1) / kSplit, kbeg = blockIdx.z * slice, kend = min(k, kbeg + slice);
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = kbeg; k0 < kend; k0 += 32) {
    for (int r = ty; r < 32; r += 8) {
      const int ak = k0 + tx;
      as[r][tx] = (row0 + r < m && ak < kend) ? __bfloat162float(a[(size_t)(row0 + r) * k + ak]) : 0.f;
      bs[r][tx] = (col0 + r < n && ak < kend) ? __bfloat162float(b[(size_t)(col0 + r) * k + ak]) : 0.f;
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
    if (r < m && col < n) atomicAdd(&ws[(size_t)r * n + col], acc[i]);
  }
}

__global__ void to_bf16(const float* __restrict__ ws, __nv_bfloat16* __restrict__ c, size_t count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
    c[i] = __float2bfloat16(ws[i]);
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(a.device().device_type, a.device().device_id));
  static float* ws = nullptr;
  static size_t ws_count = 0;
  const size_t count = (size_t)m * n;
  if (ws_count < count) {
    if (ws != nullptr) cudaFree(ws);
    if (cudaMalloc(&ws, count * sizeof(float)) != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "no workspace";
    ws_count = count;
  }
  cudaMemsetAsync(ws, 0, count * sizeof(float), stream);
  gemm_splitk<<<dim3((n + 31) / 32, (m + 31) / 32, kSplit), dim3(32, 8), 0, stream>>>(
      static_cast<const __nv_bfloat16*>(a.data_ptr()), static_cast<const __nv_bfloat16*>(b.data_ptr()), ws, m, n, k);
  to_bf16<<<264, 256, 0, stream>>>(ws, static_cast<__nv_bfloat16*>(c.data_ptr()), count);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "launch failed: " << cudaGetErrorString(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
