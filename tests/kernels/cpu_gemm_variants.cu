// Host-code candidates for the CPU tests of the evaluation machinery (task tests/evaluator/tasks/tiny_gemm).
// Tests prepend "#define VARIANT_<NAME>" to pick a behaviour; without one the kernel is correct.
// The tensors are CPU tensors: the pipeline's device_type="cpu" mode exists for exactly these tests.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#if defined(VARIANT_PRINT_ENV)
extern char** environ;
#endif

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  float* pa = static_cast<float*>(a.data_ptr());
  const float* pb = static_cast<const float*>(b.data_ptr());
  float* pc = static_cast<float*>(c.data_ptr());
#if defined(VARIANT_HANG)
  for (volatile int spin = 1; spin;) {
  }
#endif
#if defined(VARIANT_CRASH)
  volatile int* bad = nullptr;
  *bad = 1;
#endif
#if defined(VARIANT_NOISY)
  for (int i = 0; i < 200000; ++i) std::printf("noise line %d from the candidate\n", i);
#endif
#if defined(VARIANT_UNWRITTEN)
  return;
#endif
#if defined(VARIANT_PRINT_ENV)
  for (char** e = environ; *e; ++e) std::printf("ENV %s\n", *e);
#endif
#if defined(VARIANT_SKIP_SEEN_BUFFERS)
  // Skips the work whenever the output buffer was seen before with the same input buffers.
  static const void* seen[64][2];
  static int nseen = 0;
  for (int s = 0; s < nseen; ++s)
    if (seen[s][0] == pa && seen[s][1] == pc) return;
  if (nseen < 64) { seen[nseen][0] = pa; seen[nseen][1] = pc; ++nseen; }
#endif
#if defined(VARIANT_DRIFT)
  // Correct for the first calls, then stale.
  static int calls = 0;
  if (++calls > 12) return;
#endif
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.f;
      for (int64_t p = 0; p < k; ++p) acc += pa[i * k + p] * pb[j * k + p];
#if defined(VARIANT_WRONG)
      acc *= 1.5f;
#elif defined(VARIANT_NAN)
      if (i == m / 2 && j == n / 2) acc = NAN;
#elif defined(VARIANT_ZERO_SMALL)
      acc = 0.f;
#endif
      pc[i * n + j] = acc;
    }
  }
#if defined(VARIANT_MODIFY_INPUT)
  pa[0] += 1.0f;
#endif
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
