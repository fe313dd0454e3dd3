// Host-code candidate for the CPU test of the FP8 GEMM family (tests/tasks/test_gemm_fp8_pipeline_cpu.py): the
// task's contract on CPU tensors, C = scale_a * scale_b * (A @ B^T) from e4m3 bytes into bf16, so the evaluator's
// whole path (lent e4m3 and one-element inputs, the candidate process, the family's comparison) runs without a GPU.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

#include <cmath>
#include <cstdint>
#include <cstring>

// float8_e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN.
static float e4m3_to_float(uint8_t v) {
  const int sign = v >> 7, exponent = (v >> 3) & 0xF, mantissa = v & 0x7;
  float magnitude;
  if (exponent == 0xF && mantissa == 0x7) return NAN;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa) / 8.0f, -6);
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  }
  return sign ? -magnitude : magnitude;
}

// fp32 -> bf16 bits, round to nearest even (finite inputs).
static uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

void run_impl(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView scale_a,
              tvm::ffi::TensorView scale_b, tvm::ffi::TensorView C) {
  const int64_t m = A.size(0), k = A.size(1), n = B.size(0);
  const uint8_t* pa = static_cast<const uint8_t*>(A.data_ptr());
  const uint8_t* pb = static_cast<const uint8_t*>(B.data_ptr());
  const float scale = *static_cast<const float*>(scale_a.data_ptr()) * *static_cast<const float*>(scale_b.data_ptr());
  uint16_t* pc = static_cast<uint16_t*>(C.data_ptr());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.f;
      for (int64_t p = 0; p < k; ++p) acc += e4m3_to_float(pa[i * k + p]) * e4m3_to_float(pb[j * k + p]);
      pc[i * n + j] = float_to_bf16(acc * scale);
    }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
