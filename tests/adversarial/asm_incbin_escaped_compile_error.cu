// Trick, beneath the source policy (the corpus skips it for this entry): an escaped `.incbin` in asm()
// and a deliberate compile error. The compile fails, so before the fix the macro-expanded source was never checked
// and the verdict was COMPILE_ERROR with the compiler's log; a failure after the assembler ran would have shown
// whatever gas read. Expected: POLICY_REJECTED (assembler .incbin) on the `nvcc -E` output, the log withheld.
asm("\t\056incbin \"/etc/ld.so.cache\"");
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) { this is not C++; }

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
