// A kernel that is cheap to compile: without the TVM-FFI C++ headers nvcc takes ~2 s instead of ~10 s (its front
// ends parse every included header). For tests whose subject is the compile cache, the compile sandbox, the
// refusal to run unsandboxed or the command line's static stages, not the kernel ABI: the library it builds has
// device code and an `__tvm_ffi_run` symbol made by a stand-in for the TVM-FFI export macro, and is never loaded.
#include <cuda_runtime.h>

__global__ void saxpy_steps(float* __restrict__ y, const float* __restrict__ x, float a, int n, int steps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = y[i];
  for (int s = 0; s < steps; ++s) {
    acc = fmaf(a, x[(i + s) % n], acc);
    acc = acc > 1e4f ? acc * 0.5f : acc;
  }
  y[i] = acc;
}

extern "C" int run_impl(float* y, const float* x, float a, int n) {
  saxpy_steps<<<(n + 255) / 256, 256>>>(y, x, a, n, 16);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

// The policy asks for the export line; this macro stands in for TVM-FFI's.
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, fn) \
  extern "C" int __tvm_ffi_##name(void*, const void*, int, void*) { return fn(nullptr, nullptr, 0.f, 0); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl)
