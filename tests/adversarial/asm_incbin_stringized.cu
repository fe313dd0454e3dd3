// Trick: the directive exists only after macro expansion (stringizing plus adjacent literals), and
// it names a file the compile sandbox shows (the loader cache), so nvcc really assembles it, sandbox or not.
// Expected: POLICY_REJECTED after macro expansion (assembler .incbin), on the `nvcc -E` output.
#define ASM_TEXT(...) #__VA_ARGS__
asm("\t" ASM_TEXT(.inc) "bin \"/etc/ld.so.cache\"");
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
