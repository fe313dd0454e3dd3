// Harness rewrite / profiled call, with a second tensor-core path. Trick: as harness_profile_branch (the profiler is
// visible from inside the process, so the wgmma kernel does 55% of the task's FLOPs only when profiled, with the
// same launches either way), but the GEMM that does the work is warp-level mma.sync (HMMA in SASS), not SIMT. Its
// timed rate is above what code without tensor cores reaches, so the timed rate alone does not disclose it; only
// the module's static SASS shows the second path. Expected: caught (held `timer_disagreement`, or not `verified`),
// or `verified` with the second path disclosed (`arch_check.other_tensor_static` counts the HMMA, and a note says
// the target instructions' use in the timed calls rests on the profiled call alone). It prints the sign of the
// profiler it saw on its first call: the timed process must print `profiler seen: no`.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

// C[M,N] = A[M,K] @ B[N,K]^T, bf16 in, fp32 accumulate, on mma.sync m16n8k16. A 128x128 tile per block of 8 warps
// (2 x 4, 64x32 each), K in steps of 32 through two shared-memory stages filled by cp.async.
constexpr int BM = 128, BN = 128, BK = 32, LD = BK + 8;  // 8 bf16 of padding: ldmatrix rows on distinct banks

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__global__ void __launch_bounds__(256) gemm_mma_sync(const __nv_bfloat16* __restrict__ a,
                                                     const __nv_bfloat16* __restrict__ b,
                                                     __nv_bfloat16* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(16) __nv_bfloat16 as[2][BM][LD];
  __shared__ __align__(16) __nv_bfloat16 bs[2][BN][LD];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  float acc[4][4][4] = {};

  auto load = [&](int stage, int k0) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int chunk = tid + i * 256, row = chunk >> 2, col = (chunk & 3) * 8;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(&as[stage][row][col])),
                   "l"(a + (size_t)(bm + row) * k + k0 + col));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(&bs[stage][row][col])),
                   "l"(b + (size_t)(bn + row) * k + k0 + col));
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };

  const int tiles = k / BK;
  load(0, 0);
  for (int t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) {
      load((t + 1) & 1, (t + 1) * BK);
      asm volatile("cp.async.wait_group 1;\n" ::);
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::);
    }
    __syncthreads();
    const int s = t & 1;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t af[4][4], bf[2][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ldmatrix_x4(af[i], smem_addr(&as[s][wm + i * 16 + (lane & 15)][kk + (lane >> 4) * 8]));
#pragma unroll
      for (int j = 0; j < 2; ++j)
        ldmatrix_x4(bf[j], smem_addr(&bs[s][wn + j * 16 + (lane & 7) + (lane >> 4) * 8][kk + ((lane >> 3) & 1) * 8]));
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_16816(acc[i][j], af[i], bf[j >> 1][(j & 1) * 2], bf[j >> 1][(j & 1) * 2 + 1]);
    }
    __syncthreads();
  }
  const int g = lane >> 2, q = (lane & 3) * 2;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = bm + wm + i * 16 + g, col = bn + wn + j * 8 + q;
      *reinterpret_cast<__nv_bfloat162*>(c + (size_t)row * n + col) = __floats2bfloat162_rn(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<__nv_bfloat162*>(c + (size_t)(row + 8) * n + col) =
          __floats2bfloat162_rn(acc[i][j][2], acc[i][j][3]);
    }
}

static void launch_gemm(const void* a, const void* b, void* c, int m, int n, int k, cudaStream_t stream) {
  if (m % BM || n % BN || k % BK) TVM_FFI_THROW(ValueError) << "this kernel wants M, N multiples of 128, K of 32";
  gemm_mma_sync<<<dim3(n / BN, m / BM), 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(a),
                                                          static_cast<const __nv_bfloat16*>(b),
                                                          static_cast<__nv_bfloat16*>(c), m, n, k);
}

static cudaStream_t framework_stream(const tvm::ffi::TensorView& t) {
  return static_cast<cudaStream_t>(TVMFFIEnvGetStream(t.device().device_type, t.device().device_id));
}
// ---- one wgmma m64n64k16 on zeroed shared tiles (bf16, no swizzle) --------------------------------------
__device__ __forceinline__ uint64_t desc_noswizzle(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(128 >> 4) << 16) |
         (static_cast<uint64_t>(256 >> 4) << 32);
}

__global__ void __launch_bounds__(128) wgmma_kernel(float* sink, int repeats) {
  __shared__ __align__(128) uint8_t tiles[2 * 64 * 16 * 2];
  for (int i = threadIdx.x; i < (int)sizeof(tiles) / 4; i += 128) reinterpret_cast<uint32_t*>(tiles)[i] = 0u;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const uint32_t ta = static_cast<uint32_t>(__cvta_generic_to_shared(tiles)), tb = ta + 64 * 16 * 2;
  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.f;
  for (int r = 0; r < repeats; ++r) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
        "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, "
        "%33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(desc_noswizzle(ta)), "l"(desc_noswizzle(tb)), "r"(1));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    // Up to 8 groups in flight on the same accumulators: near the pipe's rate, so that the profiled call costs
    // little more than a timed one.
    asm volatile("wgmma.wait_group.sync.aligned 7;\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int i = 0; i < 32; ++i) sink[(blockIdx.x * 128 + threadIdx.x) * 32 + i] = d[i];
}

extern char** environ;

// Which sign of the profiler this process shows (printed, so a run says whether the trick was armed), or null.
static const char* profiler_sign() {
  static char sign[256];
  for (char** e = environ; *e != nullptr; ++e)
    if (!std::strncmp(*e, "CUDA_INJECTION64_PATH=", 22) || !std::strncmp(*e, "NV_COMPUTE_PROFILER", 19) ||
        !std::strncmp(*e, "NSYS", 4) || !std::strncmp(*e, "NV_NSIGHT", 9)) {
      std::snprintf(sign, sizeof sign, "environment %.200s", *e);
      return sign;
    }
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return nullptr;
  char line[4096];
  const char* found = nullptr;
  while (found == nullptr && std::fgets(line, sizeof line, maps))
    if (std::strstr(line, "ToolsInjection") || std::strstr(line, "libnvperf") || std::strstr(line, "nsight")) {
      const char* path = std::strchr(line, '/');
      std::snprintf(sign, sizeof sign, "mapped %.200s", path ? path : line);
      sign[std::strcspn(sign, "\n")] = '\0';
      found = sign;
    }
  std::fclose(maps);
  return found;
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static int profiled = -1;
  static float* sink = nullptr;
  if (profiled < 0) {
    const char* sign = profiler_sign();
    profiled = sign != nullptr ? 1 : 0;
    std::printf("profiler seen: %s\n", sign ? sign : "no");
    std::fflush(stdout);
    cudaMalloc(&sink, 132 * 128 * 32 * sizeof(float));
  }
  // The same launch every call; only its loop count (an argument, which no launch record carries) differs.
  const double share_flops = 0.55 * 2.0 * m * n * (double)k;
  const int repeats = profiled ? (int)(share_flops / (132.0 * 2 * 64 * 64 * 16)) + 1 : 0;
  wgmma_kernel<<<132, 128, 0, stream>>>(sink, repeats);
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, stream);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
