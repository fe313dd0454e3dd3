// Trick: the directive exists only after macro expansion, and only in the host pass: under `#ifndef __CUDA_ARCH__`
// (which every host-side helper in CUDA is written with) and only where the compile's own -O3 defines __OPTIMIZE__.
// `nvcc -E` preprocesses the device pass, without the compile's flags, so a second preprocessor run never saw it,
// while gas copied the loader cache into the library (a file the compile sandbox shows).
// Expected: POLICY_REJECTED after macro expansion (assembler .incbin), on the host pass the compile itself kept.
#define ASM_TEXT(...) #__VA_ARGS__
#if !defined(__CUDA_ARCH__) && defined(__OPTIMIZE__)
asm(".pushsection .rodata\nhost_file:\n\t" ASM_TEXT(.inc) "bin \"/etc/ld.so.cache\"\n.popsection");
#endif
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
