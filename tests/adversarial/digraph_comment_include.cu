// Trick: the %: digraph for # and a comment between it and the directive name.
// Expected: POLICY_REJECTED (absolute #include path); the compiler never runs.
%:/* hidden */include "/etc/passwd"
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
