// Trick: include a device file; /dev/zero would grow the preprocessor until the time limit.
// Expected: POLICY_REJECTED (device or kernel file); the compiler never runs.
#include "/dev/zero"
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
