// Honest control (must PASS, arch `absent`): a CUDA graph captured and replayed inside `run`. The GEMM launch
// is captured once per (A, B, C) pointer triple on a private stream and the graph is launched on the framework
// stream at every call: every replay recomputes from the buffers' current contents (nothing is cached but the
// launch itself), and the graph's kernel is the submission's own.
#include <map>
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

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static cudaStream_t capture = nullptr;
  static std::map<std::tuple<void*, void*, void*, int>, cudaGraphExec_t> graphs;
  if (capture == nullptr) cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking);
  auto key = std::make_tuple(a.data_ptr(), b.data_ptr(), c.data_ptr(), m);
  auto found = graphs.find(key);
  if (found == graphs.end()) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal);
    launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, capture);
    cudaStreamEndCapture(capture, &graph);
    if (graph == nullptr || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
      TVM_FFI_THROW(RuntimeError) << "graph capture failed";
    cudaGraphDestroy(graph);
    found = graphs.emplace(key, exec).first;
  }
  cudaError_t err = cudaGraphLaunch(found->second, stream);
  if (err != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "graph launch failed: " << cudaGetErrorString(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
