// Trick: write files outside the private temporary folder (the evaluator's code, the task data, system folders),
// from a static initializer at load time and again from run(). It writes the right answer only if one write
// succeeded, so under the sandbox the output stays unwritten. Expected: INCORRECT_NUMERICAL (never written).
#include <cstdio>
#include <cstdlib>
#include <string>
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

static bool try_writes() {
  std::string targets[] = {"/etc/ptxbench-adversarial", "/usr/ptxbench-adversarial", "/var/tmp/ptxbench-adversarial",
                           "/root/ptxbench-adversarial", "/work/ptxbench-adversarial"};
  bool any = false;
  const char* pythonpath = std::getenv("PYTHONPATH");
  std::string first = pythonpath ? std::string(pythonpath).substr(0, std::string(pythonpath).find(':')) : "";
  std::string extra[] = {first + "/evaluator/ptxbench-adversarial", first + "/ptxbench-adversarial"};
  for (const auto& path : targets) {
    if (FILE* f = std::fopen(path.c_str(), "w")) { std::fputs("owned\n", f); std::fclose(f); any = true; }
    std::printf("write %s: %s\n", path.c_str(), any ? "SUCCEEDED" : "refused");
  }
  for (const auto& path : extra) {
    if (first.empty()) break;
    // A checkout under /tmp (CI clones may be) lies inside the sandbox's private tmpfs there: writing
    // is allowed and lands nowhere real, so it proves nothing. Only real folders count.
    if (path.rfind("/tmp/", 0) == 0) continue;
    if (FILE* f = std::fopen(path.c_str(), "w")) { std::fputs("owned\n", f); std::fclose(f); any = true; }
    std::printf("write %s: %s\n", path.c_str(), any ? "SUCCEEDED" : "refused");
  }
  std::fflush(stdout);
  return any;
}

static const bool wrote_at_load = try_writes();

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  if (wrote_at_load || try_writes()) host_gemm(a, b, c);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
