// Adversarial fixture: hands the GEMM to cuBLAS. Expected: POLICY_REJECTED before anything is compiled.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  static cublasHandle_t handle = nullptr;
  if (!handle) cublasCreate(&handle);
  int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  float alpha = 1.f, beta = 0.f;
  cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, b.data_ptr(), CUDA_R_16BF, k, a.data_ptr(),
               CUDA_R_16BF, k, &beta, c.data_ptr(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
