// Trick: the same dlopen, spelled with token pasting so that no "dlopen" appears in the source text.
// Expected: POLICY_REJECTED by the policy check on the preprocessed source (after macro expansion).
#include <dlfcn.h>
#include <tvm/ffi/c_api.h>

#include <cstdint>

#define GLUE(x, y) x##y
typedef int (*create_fn)(void**);

void run_impl(DLTensor* a, DLTensor* b, DLTensor* c) {
  void* lib = GLUE(dl, open)("libcub" "las.so.13", RTLD_NOW);
  auto create = reinterpret_cast<create_fn>(GLUE(dl, sym)(lib, "cub" "lasCreate_v2"));
  void* handle = nullptr;
  if (create) create(&handle);
  (void)a; (void)b; (void)c;
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
