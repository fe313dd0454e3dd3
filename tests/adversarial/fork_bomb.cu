// Trick: fork without end (every child forks too), to exhaust the host's process table.
// Expected: the sandbox's process limit (pids cgroup) holds the bomb, the verdict says the limit was hit, and the
// whole tree is killed. Once its own fork fails (the limit), the first process exits, leaving hundreds of orphans
// still forking for the evaluator to kill: RUNTIME_ERROR as soon as the limit holds, instead of waiting for the
// wall-clock limit, which a loaded machine could reach before the bomb reached the limit (startup counts too).
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
  const pid_t first = getpid();
  for (;;) {
    if (fork() < 0) {
      if (getpid() == first) _exit(3);  // the limit held; the orphans go on forking
      usleep(1000);
    }
  }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
