// Trick: the same dlopen, spelled with token pasting so that no "dlopen" appears in the source text.
// Expected: POLICY_REJECTED by the policy check on the preprocessed source (after macro expansion).
#include <dlfcn.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

#define GLUE(x, y) x##y
typedef int (*create_fn)(void**);

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  void* lib = GLUE(dl, open)("libcub" "las.so.13", RTLD_NOW);
  auto create = reinterpret_cast<create_fn>(GLUE(dl, sym)(lib, "cub" "lasCreate_v2"));
  void* handle = nullptr;
  if (create) create(&handle);
  (void)a; (void)b; (void)c;
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
