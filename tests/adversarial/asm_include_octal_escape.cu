// Trick: `\056` is `.` once the compiler decodes the literal; gas then reads `.include` and the file.
// Expected: POLICY_REJECTED (assembler .include); the compiler never runs.
asm("\056include \"/etc/passwd\"");
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
