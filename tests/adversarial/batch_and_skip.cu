// Class 1 (no batched work). Trick (gpu-mode/reference-kernels PR #104): learn the order in which the harness
// rotates its input sets (the buffer triple that follows each triple, confirmed twice, so one-off trial
// buffers, which may already be freed, are never touched) and compute two calls in one launch: a call computes
// its own GEMM and the next set's (blockIdx.z picks the triple), and the next call returns at once. Half the
// calls are timed as no-ops. The evaluator must: give every call fresh inputs (so a result computed ahead is
// stale) and poison outputs before every call: INCORRECT_NUMERICAL, "timed call ... differs from the reference".
#include <map>
#include <set>
#include <tuple>
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

struct Triple {
  const void *a, *b;
  void* c;
  bool operator<(const Triple& o) const { return std::tie(a, b, c) < std::tie(o.a, o.b, o.c); }
  bool operator==(const Triple& o) const { return a == o.a && b == o.b && c == o.c; }
};

struct Next {
  Triple triple;
  int confirmed;  // how many times in a row this successor was seen
};

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static std::map<Triple, Next> next;
  static std::set<Triple> done;
  static Triple previous{nullptr, nullptr, nullptr};
  static bool have_previous = false;
  const Triple self{a.data_ptr(), b.data_ptr(), c.data_ptr()};
  if (have_previous) {
    auto it = next.find(previous);
    if (it != next.end() && it->second.triple == self) ++it->second.confirmed;
    else next[previous] = {self, 1};
  }
  previous = self, have_previous = true;
  if (done.erase(self)) return;  // computed by the previous call's launch
  Triples t{};
  int count = 1;
  t.a[0] = static_cast<const __nv_bfloat16*>(self.a);
  t.b[0] = static_cast<const __nv_bfloat16*>(self.b);
  t.c[0] = static_cast<__nv_bfloat16*>(self.c);
  auto ahead = next.find(self);
  if (ahead != next.end() && ahead->second.confirmed >= 2 && !(ahead->second.triple == self)) {
    const Triple& o = ahead->second.triple;
    t.a[1] = static_cast<const __nv_bfloat16*>(o.a);
    t.b[1] = static_cast<const __nv_bfloat16*>(o.b);
    t.c[1] = static_cast<__nv_bfloat16*>(o.c);
    count = 2;
    done.insert(o);
  }
  gemm_batched<<<dim3((n + 31) / 32, (m + 31) / 32, count), dim3(32, 8), 0, stream>>>(t, m, n, k);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
