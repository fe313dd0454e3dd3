// Trick: fork without end (every child forks too), to exhaust the host's process table.
// Expected: the sandbox's process limit (pids cgroup) holds the bomb, the verdict says the limit was hit, and the
// whole tree is killed. The children exec a shell that forks on (a copy of the whole Python process is slow to
// fork: on two loaded cores it reached a few dozen processes in 30 s; shells reach the limit within a second).
// Once its own fork fails (the limit), the first process exits and leaves the rest for the evaluator to kill:
// RUNTIME_ERROR as soon as the limit holds, not a wait for the wall-clock limit.
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
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", "exec 2>/dev/null; b() { b & b & wait; }; b", static_cast<char*>(nullptr));
      for (;;) {  // no shell: fork on as a copy of this process
        if (fork() < 0) usleep(1000);
      }
    }
    if (pid < 0) {
      if (getpid() == first) _exit(3);  // the limit held; the others go on forking
      usleep(1000);
    }
  }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
