// Trick: #pragma GCC dependency built by stringizing pasted tokens, so neither the source nor the
// preprocessed output (nvcc -E consumes the pragma) shows it; GCC then looks the file up and names it.
// Expected: contained. /etc/passwd is not in the compile sandbox; the compiler's error naming it is cut
// from the log (COMPILE_ERROR).
#define STR(x) #x
#define XSTR(x) STR(x)
#define CAT(a, b) a##b
#define PRAGMA(x) _Pragma(XSTR(x))
PRAGMA(GCC CAT(depend, ency) "/etc/passwd")
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
