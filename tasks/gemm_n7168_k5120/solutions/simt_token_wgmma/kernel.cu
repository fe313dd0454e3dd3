// SIMT (FFMA, fp32 accumulate) GEMM for gemm_n7168_k5120: C[M,N] = A[M,K] @ B[N,K]^T.
// Shared-memory tiled, 128x128 per block, 8x8 per thread. The tensor cores do none of the work; the kernel
// has one warpgroup of one block execute a single wgmma whose result only reaches a scratch
// buffer (negative control: executed, negligible tensor-core share).
#define WGMMA_DEAD 1
#define WGMMA_TOKEN 2
#define WGMMA_MODE WGMMA_TOKEN
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include <cstdint>

// ---- Hopper primitives: wgmma synchronisation -------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}


// D[64x64] (+)= A[64x16] * B[64x16]^T, both operands from shared memory (K-major), fp32 accumulate.
__device__ __forceinline__ void wgmma_m64n64k16_ss(float* d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// ---- SIMT GEMM: 128x128 tile per block, 256 threads, 8x8 outputs per thread, FFMA in fp32 ----------------

constexpr int TM = 128, TN = 128, TK = 16, THREADS = 256;
constexpr int PAD = 4;  // keeps float4 reads aligned while shifting rows across banks

// Operand tiles for the wgmma (64x16 A, 64x16 B, bf16, no swizzle: 8x8 core matrices of 128 bytes).
constexpr int WG_TILE_BYTES = 64 * 16 * 2;

__device__ __forceinline__ uint64_t desc_noswizzle(uint32_t addr) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>(128 >> 4) << 16;  // LBO: next core matrix along K
  d |= static_cast<uint64_t>(256 >> 4) << 32;  // SBO: next 8-row group along M/N
  return d;                                     // swizzle mode 0
}

__global__ void __launch_bounds__(THREADS)
    simt_gemm_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                     __nv_bfloat16* __restrict__ C, int M, int N, int K, int tc_flag, float* __restrict__ sink) {
  __shared__ __align__(16) float As[2][TK][TM + PAD];
  __shared__ __align__(16) float Bs[2][TK][TN + PAD];
  __shared__ __align__(128) uint8_t wg_tiles[2 * WG_TILE_BYTES];

  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int m0 = blockIdx.y * TM, n0 = blockIdx.x * TN;
  // Global -> shared: each thread moves 8 consecutive bf16 (16 bytes) of one row of A and of B.
  const int ld_row = tid / 2, ld_k = (tid % 2) * 8;
  const bool a_ok = (m0 + ld_row) < M;
  const __nv_bfloat16* a_ptr = A + static_cast<size_t>(a_ok ? m0 + ld_row : 0) * K + ld_k;
  const __nv_bfloat16* b_ptr = B + static_cast<size_t>(n0 + ld_row) * K + ld_k;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  uint4 ra = a_ok ? *reinterpret_cast<const uint4*>(a_ptr) : make_uint4(0, 0, 0, 0);
  uint4 rb = *reinterpret_cast<const uint4*>(b_ptr);

  auto stash = [&](int buf) {
    const __nv_bfloat16* pa = reinterpret_cast<const __nv_bfloat16*>(&ra);
    const __nv_bfloat16* pb = reinterpret_cast<const __nv_bfloat16*>(&rb);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      As[buf][ld_k + i][ld_row] = __bfloat162float(pa[i]);
      Bs[buf][ld_k + i][ld_row] = __bfloat162float(pb[i]);
    }
  };

  stash(0);
  __syncthreads();

  const int k_tiles = K / TK;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < k_tiles) {  // prefetch the next k-slice into registers while this one is multiplied
      ra = a_ok ? *reinterpret_cast<const uint4*>(a_ptr + (kt + 1) * TK) : make_uint4(0, 0, 0, 0);
      rb = *reinterpret_cast<const uint4*>(b_ptr + (kt + 1) * TK);
    }
#pragma unroll
    for (int k = 0; k < TK; ++k) {
      float a[8], b[8];
      *reinterpret_cast<float4*>(&a[0]) = *reinterpret_cast<const float4*>(&As[buf][k][ty * 4]);
      *reinterpret_cast<float4*>(&a[4]) = *reinterpret_cast<const float4*>(&As[buf][k][64 + ty * 4]);
      *reinterpret_cast<float4*>(&b[0]) = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4]);
      *reinterpret_cast<float4*>(&b[4]) = *reinterpret_cast<const float4*>(&Bs[buf][k][64 + tx * 4]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (kt + 1 < k_tiles) stash(buf ^ 1);
    __syncthreads();
  }

#if WGMMA_MODE == WGMMA_DEAD
  // Never taken: the host always passes tc_flag = 0, but the compiler cannot know that, so the wgmma
  // below is real code in the SASS that never executes.
  if (tc_flag != 0) {
    const uint32_t ta = smem_u32(wg_tiles), tb = ta + WG_TILE_BYTES;
    float d[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) d[i] = 0.f;
    wgmma_fence();
    wgmma_m64n64k16_ss(d, desc_noswizzle(ta), desc_noswizzle(tb), 1);
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i][0] += d[i * 4];
  }
#elif WGMMA_MODE == WGMMA_TOKEN
  // Exactly one warpgroup of one block runs one wgmma on zero tiles; its result only goes to a scratch
  // buffer, so it is kept by the compiler but contributes nothing to C.
  if (blockIdx.x == 0 && blockIdx.y == 0) {
    for (int i = tid; i < 2 * WG_TILE_BYTES / 4; i += THREADS) reinterpret_cast<uint32_t*>(wg_tiles)[i] = 0u;
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic-proxy writes seen by wgmma
    __syncthreads();
    if (tid < 128) {
      const uint32_t ta = smem_u32(wg_tiles), tb = ta + WG_TILE_BYTES;
      float d[32];
#pragma unroll
      for (int i = 0; i < 32; ++i) d[i] = 0.f;
      wgmma_fence();
      wgmma_m64n64k16_ss(d, desc_noswizzle(ta), desc_noswizzle(tb), 1);
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < 32; ++i) sink[tid * 32 + i] = d[i];
    }
  }
#endif

  // Epilogue: 2 x 2 blocks of 4x4 outputs, 4 bf16 (8 bytes) per store.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (row >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = n0 + h * 64 + tx * 4;
      uint2 v;
      v.x = pack_bf16x2(acc[i][h * 4 + 0], acc[i][h * 4 + 1]);
      v.y = pack_bf16x2(acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      *reinterpret_cast<uint2*>(C + static_cast<size_t>(row) * N + col) = v;
    }
  }
}

// ---- host entry point ----------------------------------------------------------------------------------

namespace {
void check_bf16_2d(const tvm::ffi::TensorView& t, const char* name) {
  DLDataType dt = t.dtype();
  if (t.ndim() != 2 || dt.code != kDLBfloat || dt.bits != 16 || dt.lanes != 1) {
    TVM_FFI_THROW(ValueError) << name << " must be a 2D bfloat16 tensor";
  }
  if (t.device().device_type != kDLCUDA) TVM_FFI_THROW(ValueError) << name << " must be on a CUDA device";
}
}  // namespace

void run_impl(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) {
  check_bf16_2d(A, "A");
  check_bf16_2d(B, "B");
  check_bf16_2d(C, "C");
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  if (B.size(1) != K || C.size(0) != M || C.size(1) != N) TVM_FFI_THROW(ValueError) << "shape mismatch";
  if (N % TN != 0 || K % TK != 0) TVM_FFI_THROW(ValueError) << "N must be a multiple of 128 and K of 16";
  if (M == 0) return;
  DLDevice dev = A.device();
  cudaStream_t stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  // A scratch word per wgmma accumulator element (token mode writes 128 x 32 floats there).
  static float* sink = nullptr;
  if (sink == nullptr) cudaMalloc(&sink, 128 * 32 * sizeof(float));
  const int tc_flag = M < 0 ? 1 : 0;  // always 0 here; unknown to the compiler
  dim3 grid(static_cast<unsigned>(N / TN), static_cast<unsigned>((M + TM - 1) / TM));
  simt_gemm_kernel<<<grid, THREADS, 0, stream>>>(static_cast<const __nv_bfloat16*>(A.data_ptr()),
                                                 static_cast<const __nv_bfloat16*>(B.data_ptr()),
                                                 static_cast<__nv_bfloat16*>(C.data_ptr()), static_cast<int>(M),
                                                 static_cast<int>(N), static_cast<int>(K), tc_flag, sink);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "launch failed: " << cudaGetErrorString(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
