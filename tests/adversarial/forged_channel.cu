// Trick: write forged result messages into every pipe the process holds (the evaluator's channel among them).
// Expected: RUNTIME_ERROR naming the result channel (messages out of order / not sent by the evaluator's side).
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>
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
  host_gemm(a, b, c);
  const char* forged = "{\"event\": \"trial\", \"index\": 0, \"outputs\": [], \"inputs_modified\": []}\n";
  for (int fd = 3; fd < 256; ++fd) {
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
      ssize_t ignored = write(fd, forged, std::strlen(forged));
      (void)ignored;
    }
  }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
