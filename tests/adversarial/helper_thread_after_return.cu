// Class 3 (work hidden from the GPU timer still counts). Trick: `run` only enqueues and returns at once; the
// work is finished later by a helper thread. On the framework stream: copy A and B to the host, then a host
// callback (cudaLaunchHostFunc: no GPU activity record) that wakes a helper std::thread, which fans the GEMM out
// to a host thread pool, and blocks the stream until it is done; then the copy of C back. The stream is ordered,
// so the output is right by the time anything reads it, but the GPU timeline shows only copies and an idle gap.
// The evaluator must: PASSED but held, integrity hold `host_time` (the trusted clock sees the gap).
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
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

namespace {
struct Job {
  std::mutex mu;
  std::condition_variable cv;
  bool pending = false, finished = false;
  const uint16_t *a = nullptr, *b = nullptr;
  uint16_t* c = nullptr;
  int m = 0, n = 0, k = 0;
} job;

float f32(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void helper() {
  for (;;) {
    std::unique_lock<std::mutex> lock(job.mu);
    job.cv.wait(lock, [] { return job.pending; });
    job.pending = false;
    lock.unlock();
    const unsigned workers = std::thread::hardware_concurrency() ? std::thread::hardware_concurrency() : 1;
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w)
      pool.emplace_back([w, workers] {
        for (int j = w; j < job.n; j += workers)
          for (int i = 0; i < job.m; ++i) {
            float acc = 0.f;
            for (int p = 0; p < job.k; ++p) acc += f32(job.a[(size_t)i * job.k + p]) * f32(job.b[(size_t)j * job.k + p]);
            uint32_t bits;
            std::memcpy(&bits, &acc, 4);
            job.c[(size_t)i * job.n + j] = static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
          }
      });
    for (auto& t : pool) t.join();
    lock.lock();
    job.finished = true;
    job.cv.notify_all();
  }
}

void CUDART_CB hand_over(void*) {  // runs on CUDA's callback thread; no CUDA calls allowed here
  std::unique_lock<std::mutex> lock(job.mu);
  job.pending = true;
  job.finished = false;
  job.cv.notify_all();
  job.cv.wait(lock, [] { return job.finished; });
}
}  // namespace

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static uint16_t *ha = nullptr, *hb = nullptr, *hc = nullptr;
  static std::thread* worker = nullptr;
  if (worker == nullptr) {
    cudaMallocHost(&ha, (size_t)m * k * 2);
    cudaMallocHost(&hb, (size_t)n * k * 2);
    cudaMallocHost(&hc, (size_t)m * n * 2);
    worker = new std::thread(helper);
    worker->detach();
  }
  job.a = ha, job.b = hb, job.c = hc, job.m = m, job.n = n, job.k = k;
  cudaMemcpyAsync(ha, a.data_ptr(), (size_t)m * k * 2, cudaMemcpyDeviceToHost, stream);
  cudaMemcpyAsync(hb, b.data_ptr(), (size_t)n * k * 2, cudaMemcpyDeviceToHost, stream);
  cudaLaunchHostFunc(stream, hand_over, nullptr);
  cudaMemcpyAsync(c.data_ptr(), hc, (size_t)m * n * 2, cudaMemcpyHostToDevice, stream);
  if (m < 0) launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, stream);  // never
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
