// Adversarial fixture: a kernel that spins forever on a flag nobody sets. Expected: TIMEOUT, and the next evaluation on the GPU passes.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

__global__ void spin(volatile int* flag) {
  while (*flag == 0) {
  }
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(c.device().device_type, c.device().device_id));
  cudaMemsetAsync(c.data_ptr(), 0, sizeof(int), stream);
  spin<<<1, 32, 0, stream>>>(static_cast<volatile int*>(c.data_ptr()));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
