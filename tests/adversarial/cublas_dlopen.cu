// Trick: reach cuBLAS through dlopen/dlsym so that no cuBLAS header or symbol appears at link time.
// Expected: POLICY_REJECTED before compiling (dynamic loading is forbidden).
#include <dlfcn.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

typedef int (*create_fn)(void**);

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  void* lib = dlopen("libcublas.so.13", RTLD_NOW);
  auto create = reinterpret_cast<create_fn>(dlsym(lib, "cublasCreate_v2"));
  void* handle = nullptr;
  if (create) create(&handle);
  (void)a; (void)b; (void)c;
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
