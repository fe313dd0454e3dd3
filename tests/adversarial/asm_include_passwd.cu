// Trick: the host assembler's .include reads a file and quotes each line in its errors.
// Expected: POLICY_REJECTED (assembler .include); the compiler never runs.
asm(".include \"/etc/passwd\"");
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
