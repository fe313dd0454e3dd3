// Trick: a backslash-newline inside the directive name; the preprocessor joins the lines first.
// Expected: POLICY_REJECTED (absolute #include path); the compiler never runs.
#inc\
lude "/etc/os-release"
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
