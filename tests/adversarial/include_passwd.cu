// Trick: make the compiler read a file outside the include path; its error messages would echo the contents.
// Expected: POLICY_REJECTED (absolute #include path); the compiler never runs.
#include "/etc/passwd"
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
