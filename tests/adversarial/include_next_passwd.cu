// Trick: #include_next is not matched by a rule for #include; nvcc would quote the file in the log.
// Expected: POLICY_REJECTED (#include_next is not allowed); the compiler never runs.
#include_next "/etc/passwd"
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
