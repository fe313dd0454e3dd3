// Trick: write files outside the private temporary folder (the evaluator's code, the task data, system folders),
// from a static initializer at load time and again from run(). It writes the right answer only if one write
// succeeded, so under the sandbox the output stays unwritten. Expected: INCORRECT_NUMERICAL (never written).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tvm/ffi/c_api.h>

#include <cstdint>

// fp32 C[M,N] = A[M,K] @ B[N,K]^T on host tensors (task tests/evaluator/tasks/tiny_gemm, CPU mode).
static void host_gemm(DLTensor* a, DLTensor* b, DLTensor* c) {
  const int64_t m = a->shape[0], k = a->shape[1], n = b->shape[0];
  const float* pa = static_cast<const float*>(a->data);
  const float* pb = static_cast<const float*>(b->data);
  float* pc = static_cast<float*>(c->data);
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

void run_impl(DLTensor* a, DLTensor* b, DLTensor* c) {
  if (wrote_at_load || try_writes()) host_gemm(a, b, c);
}

// The entry point through TVM-FFI's C ABI (tvm/ffi/c_api.h) instead of its C++ headers, which cost nvcc ~8 s of
// parsing: what TVM_FFI_DLL_EXPORT_TYPED_FUNC makes, written out for three tensors. The trick above is the subject.
static DLTensor* tensor_arg(const TVMFFIAny* args, int i) {
  return args[i].type_index == kTVMFFIDLTensorPtr ? static_cast<DLTensor*>(args[i].v_ptr)
                                                   : TVMFFITensorGetDLTensorPtr(args[i].v_obj);
}
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, fn)                                                                 \
  extern "C" __attribute__((visibility("default"))) int __tvm_ffi_##name(void*, const TVMFFIAny* args,          \
                                                                         int32_t num_args, TVMFFIAny* result) { \
    if (num_args != 3) return -1;                                                                              \
    fn(tensor_arg(args, 0), tensor_arg(args, 1), tensor_arg(args, 2));                                         \
    result->type_index = kTVMFFINone;                                                                          \
    return 0;                                                                                                  \
  }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl)
