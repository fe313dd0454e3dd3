// Trick: write forged result messages into every pipe the process holds (the evaluator's channel among them).
// Expected: RUNTIME_ERROR naming the result channel (messages out of order / not sent by the evaluator's side).
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
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

void run_impl(DLTensor* a, DLTensor* b, DLTensor* c) {
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
