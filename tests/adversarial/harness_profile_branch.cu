// Harness rewrite / profiled call. Trick: the profiler is visible from inside the process
// (its injection variables and libraries), so run the target instructions only when profiled, with launches the
// trusted side cannot tell apart: every call launches the same two kernels with the same grid and block; the
// wgmma kernel loops over enough m64n64k16 products to cover 60% of the task's FLOPs (above the 0.5 share that
// `verified` needs) only when the profiler is present, and returns at once otherwise. The timed calls are the
// SIMT GEMM. Native code only, no Python. Sized so that the profiled call is about 5% slower than a timed one,
// inside integrity.NCU_MARGIN. Expected: caught (held `timer_disagreement`, or not `verified`), or, where it is
// `verified`, disclosed: the timed rate (about 23 TFLOP/s) is within the H200's non-tensor rate, so the verdict says
// the target instructions rest on the profiled call alone (`arch_check.timed_beyond_non_tensor` false). It prints
// the sign of the profiler it saw on its first call, so that a run shows the trick was armed: the timed process
// must print `profiler seen: no`, and the profiled call must execute the wgmma.
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
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
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
  const double share_flops = 0.6 * 2.0 * m * n * (double)k;
  const int repeats = profiled ? (int)(share_flops / (132.0 * 2 * 64 * 64 * 16)) + 1 : 0;
  wgmma_kernel<<<132, 128, 0, stream>>>(sink, repeats);
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, stream);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
