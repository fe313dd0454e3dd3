// Simple correct SIMT GEMM for gemm_n7168_k5120: C[M,N] = A[M,K] @ B[N,K]^T, bf16 in, fp32 accumulate, bf16 out.
// Shared-memory tiled, no tensor cores: the evaluator's positive control with zero target instructions.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

namespace {
constexpr int kTile = 32;
constexpr int kThreadRows = 4;  // each thread computes kThreadRows outputs of one column

__global__ void simt_gemm_kernel(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                                 __nv_bfloat16* __restrict__ c, int m, int n, int k) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x;             // 0..31: column within tile
  const int ty = threadIdx.y;             // 0..7: row group
  const int row0 = blockIdx.y * kTile;
  const int col0 = blockIdx.x * kTile;
  float acc[kThreadRows] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < k; k0 += kTile) {
    for (int r = ty; r < kTile; r += blockDim.y) {
      int ar = row0 + r, ak = k0 + tx;
      as[r][tx] = (ar < m && ak < k) ? __bfloat162float(a[(size_t)ar * k + ak]) : 0.f;
      int br = col0 + r;
      bs[r][tx] = (br < n && ak < k) ? __bfloat162float(b[(size_t)br * k + ak]) : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < kTile; ++kk) {
      float bv = bs[tx][kk];
#pragma unroll
      for (int i = 0; i < kThreadRows; ++i) acc[i] += as[ty * kThreadRows + i][kk] * bv;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kThreadRows; ++i) {
    int r = row0 + ty * kThreadRows + i, col = col0 + tx;
    if (r < m && col < n) c[(size_t)r * n + col] = __float2bfloat16(acc[i]);
  }
}
}  // namespace

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = static_cast<int>(a.shape()[0]);
  const int k = static_cast<int>(a.shape()[1]);
  const int n = static_cast<int>(b.shape()[0]);
  DLDevice dev = a.device();
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  dim3 block(kTile, kTile / kThreadRows);
  dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  simt_gemm_kernel<<<grid, block, 0, stream>>>(static_cast<const __nv_bfloat16*>(a.data_ptr()),
                                               static_cast<const __nv_bfloat16*>(b.data_ptr()),
                                               static_cast<__nv_bfloat16*>(c.data_ptr()), m, n, k);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "launch failed: " << cudaGetErrorString(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
