// Adversarial fixture: a kernel that stores through a wild pointer. Expected: RUNTIME_ERROR with CUDA's illegal-address text, and the next evaluation passes.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

__global__ void wild_store(float* p) { p[threadIdx.x * 1024] = 1.0f; }

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(c.device().device_type, c.device().device_id));
  wild_store<<<1, 32, 0, stream>>>(reinterpret_cast<float*>(0x10));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
