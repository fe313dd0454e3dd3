// Trick: a template instantiation tree with 2^40 distinct leaves, to tie up the compiler (and its memory).
// Expected: COMPILE_ERROR, killed at the compile time limit (or by the sandbox's memory limit).
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

template <int Depth, unsigned long long Path>
struct Tree {
  static constexpr unsigned long long value =
      Tree<Depth - 1, Path * 2>::value + Tree<Depth - 1, Path * 2 + 1>::value;
};
template <unsigned long long Path>
struct Tree<0, Path> {
  static constexpr unsigned long long value = Path;
};

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  volatile unsigned long long sink = Tree<40, 1>::value;
  (void)sink; (void)a; (void)b; (void)c;
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
