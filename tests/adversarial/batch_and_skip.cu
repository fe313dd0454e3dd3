// Class 1 (no batched work). Trick (gpu-mode/reference-kernels PR #104): remember every (A, B, C) buffer triple
// seen; a call on a triple not already done computes the GEMM of *all* known triples in one launch
// (blockIdx.z picks the triple) and marks the others done, so the next calls on them return at once. With the
// timing loop rotating three input sets, one call in three does all the work and is the only one timed as
// non-zero. The evaluator must: give every call fresh inputs (so a result computed ahead is stale) and poison
// outputs before every call: INCORRECT_NUMERICAL, "timed call ... differs from the reference".
#include <vector>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

// Honest tiled SIMT GEMM (as tests/kernels/simt_gemm.cu): C[M,N] = A[M,K] @ B[N,K]^T, bf16 in, fp32 accumulate.
__global__ void gemm_tiled(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                           __nv_bfloat16* __restrict__ c, int m, int n, int k) {
  __shared__ float as[32][33], bs[32][33];
  const int tx = threadIdx.x, ty = threadIdx.y, row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < k; k0 += 32) {
    for (int r = ty; r < 32; r += 8) {
      const int ak = k0 + tx;
      as[r][tx] = (row0 + r < m && ak < k) ? __bfloat162float(a[(size_t)(row0 + r) * k + ak]) : 0.f;
      bs[r][tx] = (col0 + r < n && ak < k) ? __bfloat162float(b[(size_t)(col0 + r) * k + ak]) : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < 32; ++kk) {
      const float bv = bs[tx][kk];
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] += as[ty * 4 + i][kk] * bv;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i, col = col0 + tx;
    if (r < m && col < n) c[(size_t)r * n + col] = __float2bfloat16(acc[i]);
  }
}

static void launch_gemm(const void* a, const void* b, void* c, int m, int n, int k, cudaStream_t stream) {
  gemm_tiled<<<dim3((n + 31) / 32, (m + 31) / 32), dim3(32, 8), 0, stream>>>(
      static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b), static_cast<__nv_bfloat16*>(c), m,
      n, k);
}

static cudaStream_t framework_stream(const tvm::ffi::TensorView& t) {
  return static_cast<cudaStream_t>(TVMFFIEnvGetStream(t.device().device_type, t.device().device_id));
}

struct Triples {
  const __nv_bfloat16* a[8];
  const __nv_bfloat16* b[8];
  __nv_bfloat16* c[8];
};

__global__ void gemm_batched(Triples t, int m, int n, int k) {
  // Same tiling as gemm_tiled; blockIdx.z selects the triple.
  __shared__ float as[32][33], bs[32][33];
  const __nv_bfloat16 *a = t.a[blockIdx.z], *b = t.b[blockIdx.z];
  __nv_bfloat16* c = t.c[blockIdx.z];
  const int tx = threadIdx.x, ty = threadIdx.y, row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < k; k0 += 32) {
    for (int r = ty; r < 32; r += 8) {
      const int ak = k0 + tx;
      as[r][tx] = (row0 + r < m && ak < k) ? __bfloat162float(a[(size_t)(row0 + r) * k + ak]) : 0.f;
      bs[r][tx] = (col0 + r < n && ak < k) ? __bfloat162float(b[(size_t)(col0 + r) * k + ak]) : 0.f;
    }
    __syncthreads();
    for (int kk = 0; kk < 32; ++kk)
      for (int i = 0; i < 4; ++i) acc[i] += as[ty * 4 + i][kk] * bs[tx][kk];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i, col = col0 + tx;
    if (r < m && col < n) c[(size_t)r * n + col] = __float2bfloat16(acc[i]);
  }
}

struct Known {
  const void *a, *b;
  void* c;
  bool done;
};

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static std::vector<Known> known;
  Known* self = nullptr;
  for (auto& e : known)
    if (e.a == a.data_ptr() && e.b == b.data_ptr() && e.c == c.data_ptr()) self = &e;
  if (self != nullptr && self->done) {
    self->done = false;  // computed by an earlier call's batch
    return;
  }
  if (self == nullptr) {
    if (known.size() == 8) known.erase(known.begin());
    known.push_back({a.data_ptr(), b.data_ptr(), c.data_ptr(), false});
  }
  Triples t{};
  int count = 0;
  for (auto& e : known) {
    t.a[count] = static_cast<const __nv_bfloat16*>(e.a);
    t.b[count] = static_cast<const __nv_bfloat16*>(e.b);
    t.c[count] = static_cast<__nv_bfloat16*>(e.c);
    e.done = !(e.a == a.data_ptr() && e.b == b.data_ptr() && e.c == c.data_ptr());
    ++count;
  }
  gemm_batched<<<dim3((n + 31) / 32, (m + 31) / 32, count), dim3(32, 8), 0, stream>>>(t, m, n, k);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
