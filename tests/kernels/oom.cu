// Adversarial fixture: allocates device memory in 16 GiB pieces until the GPU runs out, then reports the failure. Expected: RUNTIME_ERROR saying 'out of memory'; the next evaluation passes.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  for (int i = 0; i < 64; ++i) {  // at most 1 TiB: more than any GPU has
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, size_t(16) << 30);
    if (err != cudaSuccess) {
      TVM_FFI_THROW(RuntimeError) << "cudaMalloc failed after " << i << " pieces of 16 GiB: " << cudaGetErrorString(err);
    }
  }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
