// Starter kernel for the PTXBench FP8 GEMM tasks: C[M,N] = (A * scale_a) @ (B * scale_b)^T with A[M,K] and B[N,K]
// float8_e4m3fn (row-major), scale_a and scale_b one-element float32 tensors in device memory, C bf16.
//
// Correct and deliberately simple: one thread per output element, the e4m3 values widened to fp32 and multiplied
// with plain FMA on the CUDA cores, the scales applied once at the end. It uses no wgmma/TMA (sm_90a) or tcgen05
// (sm_100a), so it passes the correctness layer and fails the architecture layer; replace the kernel, keep the
// `run` entry point. All sizes come from the tensors, so the same file serves every FP8 GEMM task of the suite.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include <cstdint>

namespace {

using tvm::ffi::TensorView;

constexpr int kTile = 16;

__global__ void gemm_fp8_naive(const __nv_fp8_e4m3* __restrict__ A, const __nv_fp8_e4m3* __restrict__ B,
                               const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                               __nv_bfloat16* __restrict__ C, int64_t M, int64_t N, int64_t K) {
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  const int64_t m = static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.y;
  if (m >= M || n >= N) return;
  const __nv_fp8_e4m3* a = A + m * K;
  const __nv_fp8_e4m3* b = B + n * K;
  float acc = 0.0f;
  for (int64_t k = 0; k < K; ++k) acc = fmaf(static_cast<float>(a[k]), static_cast<float>(b[k]), acc);
  C[m * N + n] = __float2bfloat16(acc * (*scale_a * *scale_b));
}

bool is_dtype(DLDataType t, uint8_t code, uint8_t bits) { return t.code == code && t.bits == bits && t.lanes == 1; }

template <typename T>
T* typed_ptr(const TensorView& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data_ptr()) + t.byte_offset());
}

void check_on_gpu(const TensorView& t, const char* name) {
  TVM_FFI_CHECK(t.IsContiguous(), ValueError) << name << " must be contiguous";
  TVM_FFI_CHECK(t.device().device_type == kDLCUDA, ValueError) << name << " must be on a CUDA device";
}

void check_matrix(const TensorView& t, const char* name, uint8_t code, uint8_t bits) {
  TVM_FFI_CHECK(t.ndim() == 2, ValueError) << name << " must be 2-D";
  TVM_FFI_CHECK(is_dtype(t.dtype(), code, bits), ValueError) << name << " has the wrong dtype";
  check_on_gpu(t, name);
}

void check_scale(const TensorView& t, const char* name) {
  TVM_FFI_CHECK(t.ndim() == 0 && is_dtype(t.dtype(), kDLFloat, 32), ValueError) << name << " must be a float32 scalar tensor";
  check_on_gpu(t, name);
}

void run_impl(TensorView A, TensorView B, TensorView scale_a, TensorView scale_b, TensorView C) {
  check_matrix(A, "A", kDLFloat8_e4m3fn, 8);
  check_matrix(B, "B", kDLFloat8_e4m3fn, 8);
  check_scale(scale_a, "scale_a");
  check_scale(scale_b, "scale_b");
  check_matrix(C, "C", kDLBfloat, 16);
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  TVM_FFI_CHECK(B.size(1) == K, ValueError) << "B must be [N, K] with the K of A";
  TVM_FFI_CHECK(C.size(0) == M && C.size(1) == N, ValueError) << "C must be [M, N]";
  if (M == 0 || N == 0) return;

  const DLDevice dev = C.device();
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((N + kTile - 1) / kTile), static_cast<unsigned>((M + kTile - 1) / kTile));
  gemm_fp8_naive<<<grid, block, 0, stream>>>(typed_ptr<const __nv_fp8_e4m3>(A), typed_ptr<const __nv_fp8_e4m3>(B),
                                             typed_ptr<const float>(scale_a), typed_ptr<const float>(scale_b),
                                             typed_ptr<__nv_bfloat16>(C), M, N, K);
  const cudaError_t err = cudaGetLastError();
  TVM_FFI_CHECK(err == cudaSuccess, RuntimeError) << "kernel launch failed: " << cudaGetErrorString(err);
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
