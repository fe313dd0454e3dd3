// Trick: print gigabytes on stdout, to fill the evaluator's disk or memory or stall it.
// Expected: RUNTIME_ERROR: the candidate process is killed once it has written more than the output limit.
#include <cstdio>
#include <cstring>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

// fp32 C[M,N] = A[M,K] @ B[N,K]^T on host tensors (task tests/evaluator/tasks/tiny_gemm, CPU mode).
static void host_gemm(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  const float* pa = static_cast<const float*>(a.data_ptr());
  const float* pb = static_cast<const float*>(b.data_ptr());
  float* pc = static_cast<float*>(c.data_ptr());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.f;
      for (int64_t p = 0; p < k; ++p) acc += pa[i * k + p] * pb[j * k + p];
      pc[i * n + j] = acc;
    }
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  static char line[1 << 16];
  std::memset(line, 'x', sizeof line - 2);
  line[sizeof line - 2] = '\n';
  for (long i = 0; i < (4L << 30) / (long)sizeof line; ++i) std::fwrite(line, 1, sizeof line - 1, stdout);
  host_gemm(a, b, c);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
