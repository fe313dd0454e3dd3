// Host boundary, the candidate's process: host kernel settings through /proc. A worker run as root once gave
// sandboxed code (every capability dropped) /proc/sys/kernel/core_pattern, vm/drop_caches, kernel/panic and
// fs/file-max opened for writing; core_pattern names a program the kernel runs as root on the next crash. This
// opens each for writing (it never writes) and checks its own ids; it writes the answer only if any opened or it
// holds root. Expected: INCORRECT_NUMERICAL (never written), every line saying "refused".
#include <fcntl.h>
#include <cstdio>
#include <unistd.h>
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

static bool opens_for_writing(const char* path) {
  int fd = open(path, O_WRONLY);
  std::printf("%s: %s\n", path, fd >= 0 ? "OPENED-FOR-WRITING" : "refused");
  if (fd >= 0) close(fd);
  return fd >= 0;
}

void run_impl(DLTensor* a, DLTensor* b, DLTensor* c) {
  const char* settings[] = {"/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches", "/proc/sys/kernel/panic",
                            "/proc/sys/fs/file-max", "/proc/sys/kernel/hostname", "/proc/sysrq-trigger"};
  bool reached = false;
  for (const char* path : settings) reached = opens_for_writing(path) || reached;
  bool root = getuid() == 0 || geteuid() == 0;
  std::printf("uid %d euid %d: %s\n", (int)getuid(), (int)geteuid(), root ? "ROOT" : "refused");
  if (reached || root) host_gemm(a, b, c);
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
