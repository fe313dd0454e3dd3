// Class "untimed work". Trick: a tensor witness fooled by work beside the real one. An honest SIMT GEMM computes C
// while a dummy kernel on a side stream (forked from and joined back to the framework stream, so every call is
// ordered and complete) runs wgmma on zero tiles in shared memory, about as many tensor-core FLOPs per call as the
// GEMM itself (2*M*N*K), and throws the result away. A witness that samples tensor-core activity over the timed
// calls sees roughly the task's FLOPs on the tensor cores; a profile of the call sees wgmma executed.
// The evaluator must: rank the call at SIMT speed (the trusted clock over the batches), PASSED with a small
// speedup; whether the dummy tensor work may count towards `verified` is for the tensor witness to decide
// (docs/threat-model.md says what it gains).
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
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
    for (int kk = 0; kk < 32; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] += as[ty * 4 + i][kk] * bs[tx][kk];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i, col = col0 + tx;
    if (r < m && col < n) c[(size_t)r * n + col] = __float2bfloat16(acc[i]);
  }
}

// A shared-memory matrix descriptor for a 64x16 bf16 tile without swizzle: 8x8 core matrices of 128 bytes, the two
// along K 128 bytes apart, the eight along M (or N) 256 bytes apart.
__device__ uint64_t tile_desc(const void* smem) {
  const uint64_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return ((addr >> 4) & 0x3fff) | ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);
}

constexpr int kDummyBlocks = 132;                 // one warpgroup per SM
constexpr double kFlopsPerWgmma = 2.0 * 64 * 64 * 16;  // m64n64k16

// One warpgroup per block: `rounds` wgmma m64n64k16 on zero tiles; the accumulators reach memory only if nonzero
// (never), which the compiler cannot know, so every wgmma stays.
__global__ void __launch_bounds__(128) dummy_tensor(float* sink, int rounds) {
  __shared__ __align__(128) __nv_bfloat16 tiles[2][64 * 16];
  for (int i = threadIdx.x; i < 2 * 64 * 16; i += blockDim.x) (&tiles[0][0])[i] = __float2bfloat16(0.f);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the tensor core reads what was just written
  __syncthreads();
  const uint64_t da = tile_desc(tiles[0]), db = tile_desc(tiles[1]);
  float d[32] = {};
  for (int r = 0; r < rounds; ++r) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(1));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  float sum = 0.f;
  for (int i = 0; i < 32; ++i) sum += d[i];
  if (sum != 0.f) sink[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(a.device().device_type, a.device().device_id));
  static cudaStream_t side = nullptr;
  static cudaEvent_t fork, join;
  static float* sink = nullptr;
  if (side == nullptr) {
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    cudaMalloc(&sink, kDummyBlocks * 128 * sizeof(float));
  }
  const int rounds = (int)(2.0 * m * n * k / (kDummyBlocks * kFlopsPerWgmma)) + 1;  // the task's FLOPs, on tensor cores
  cudaEventRecord(fork, stream);
  cudaStreamWaitEvent(side, fork, 0);
  dummy_tensor<<<kDummyBlocks, 128, 0, side>>>(sink, rounds);
  gemm_tiled<<<dim3((n + 31) / 32, (m + 31) / 32), dim3(32, 8), 0, stream>>>(
      static_cast<const __nv_bfloat16*>(a.data_ptr()), static_cast<const __nv_bfloat16*>(b.data_ptr()),
      static_cast<__nv_bfloat16*>(c.data_ptr()), m, n, k);
  cudaEventRecord(join, side);
  cudaStreamWaitEvent(stream, join, 0);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
