// Trick: `#line 10 ELSEWHERE`, the file name from a macro (the operands of #line are macro-expanded), so no quote
// follows the directive. Every later line is then attributed to "elsewhere.h" in the preprocessor's output, where the
// policy after macro expansion reads only the candidate's own file: the pasted dlopen below went unseen, and
// diagnostics after it would quote the named file.
// Expected: POLICY_REJECTED (#line may give only a line number), before anything is compiled.
#include <dlfcn.h>
#include <tvm/ffi/c_api.h>

#include <cstdint>

#define GLUE(x, y) x##y
#define ELSEWHERE "elsewhere.h"
#line 20 ELSEWHERE
typedef int (*create_fn)(void**);

void run_impl(DLTensor* a, DLTensor* b, DLTensor* c) {
  void* lib = GLUE(dl, open)("libcub" "las.so.13", RTLD_NOW);
  auto create = reinterpret_cast<create_fn>(GLUE(dl, sym)(lib, "cub" "lasCreate_v2"));
  void* handle = nullptr;
  if (create) create(&handle);
  (void)a; (void)b; (void)c;
}

// The entry point through TVM-FFI's C ABI (tvm/ffi/c_api.h), as in cublas_dlopen_pasted.cu.
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
