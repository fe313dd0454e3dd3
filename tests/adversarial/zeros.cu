// Trick: write zeros (cheap, and close to right when outputs are tiny). Caught by the relative-norm bound.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

__global__ void gemm(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int p = 0; p < k; ++p) acc += __bfloat162float(a[(size_t)row * k + p]) * __bfloat162float(b[(size_t)col * k + p]);
  c[(size_t)row * n + col] = __float2bfloat16(acc);
}

static void launch_gemm(const void* a, const void* b, void* c, int m, int n, int k, cudaStream_t stream) {
  gemm<<<dim3((n + 255) / 256, m), 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(a),
      static_cast<const __nv_bfloat16*>(b), static_cast<__nv_bfloat16*>(c), m, n, k);
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(a.device().device_type, a.device().device_id));
  (void)k;
  cudaMemsetAsync(c.data_ptr(), 0, (size_t)m * n * sizeof(__nv_bfloat16), stream);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
