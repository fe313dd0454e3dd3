// Trick: a tab is a blank to gas, so `\t.incbin` copies the file into the object (the old rule wanted
// a space, `;` or quote before the dot). Expected: POLICY_REJECTED (assembler .incbin); the compiler never runs.
asm("\t.incbin \"/etc/passwd\"");
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
