// Trick: gas macros build the directive from pieces: `.irp d,include` then `.\d` is `.include`.
// Expected: POLICY_REJECTED (assembler .irp); the compiler never runs.
asm(".irp d,include\n.\\d \"/etc/passwd\"\n.endr");
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
