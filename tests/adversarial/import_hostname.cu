// Trick: the deprecated GCC #import reads a file like #include.
// Expected: POLICY_REJECTED (#import is not allowed); the compiler never runs.
#import "/etc/hostname"
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
