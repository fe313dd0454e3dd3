// Trick: #line names a host file; GCC prints that file's lines under the next diagnostic.
// Expected: POLICY_REJECTED (#line with a file name); the compiler never runs.
#line 1 "/etc/passwd"
#warning quote the first line
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
