// Blackwell (sm_100a) BF16 GEMM for gemm_n7168_k5120: C[M,N] = A[M,K] @ B[N,K]^T, fp32 accumulation.
// TMA loads into a 4-stage mbarrier pipeline; one thread issues tcgen05.mma (kind::f16, 128x256x16) into a
// tensor-memory accumulator and frees each stage with tcgen05.commit; the epilogue reads TMEM with tcgen05.ld.
// Written from the PTX ISA and compile-checked for sm_100a only: NOT run on a Blackwell GPU yet.
#include <cuda.h>  // CUtensorMap and enums only; the driver function is fetched at run time
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include <cstdint>

// ---- primitives shared with Hopper: mbarriers, TMA -------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// Spin until the barrier's phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

// 2D bulk tensor copy global -> shared, completion counted in bytes on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// ---- host: tensor maps through the driver entry point (no -lcuda) ----------------------------------

typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static EncodeTiledFn get_encode_tiled() {
  static EncodeTiledFn fn = nullptr;
  if (fn == nullptr) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr) {
      TVM_FFI_THROW(RuntimeError) << "cuTensorMapEncodeTiled is not available from the driver";
    }
    fn = reinterpret_cast<EncodeTiledFn>(p);
  }
  return fn;
}

// Row-major bf16 matrix [rows, cols] seen as a 2D tensor; box = [box_rows, 64 columns] with 128B swizzle.
static CUtensorMap make_map_bf16_sw128(const void* base, uint64_t rows, uint64_t cols, uint32_t box_rows) {
  CUtensorMap map;
  cuuint64_t dims[2] = {cols, rows};
  cuuint64_t strides[1] = {cols * 2};
  cuuint32_t box[2] = {64, box_rows};
  cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = get_encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides,
                                  box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) TVM_FFI_THROW(RuntimeError) << "cuTensorMapEncodeTiled failed with code " << int(r);
  return map;
}

// ---- Blackwell primitives: tensor memory and tcgen05 -----------------------------------------------------

// Shared-memory matrix descriptor, tcgen05 flavour: same address/LBO/SBO fields as Hopper, plus the fixed
// version bits [46,48) = 1 and a 3-bit layout field at [61,64) where 2 means 128-byte swizzle.
__device__ __forceinline__ uint64_t umma_desc_sw128(uint32_t addr) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>(1) << 16;              // LBO: unused for swizzled K-major
  d |= static_cast<uint64_t>(1024 >> 4) << 32;      // SBO: 8 rows x 128 bytes
  d |= static_cast<uint64_t>(1) << 46;              // descriptor version
  d |= static_cast<uint64_t>(2) << 61;              // 128B swizzle
  return d;
}

// Instruction descriptor for kind::f16: D fp32, A and B bf16, both K-major, shape M x N (K = 16).
__host__ __device__ constexpr uint32_t umma_idesc_bf16(int m, int n) {
  return (1u << 4)                                   // D format: F32
         | (1u << 7)                                 // A format: BF16
         | (1u << 10)                                // B format: BF16
         | (0u << 15) | (0u << 16)                   // A, B K-major
         | (static_cast<uint32_t>(n >> 3) << 17)     // N / 8
         | (static_cast<uint32_t>(m >> 4) << 24);    // M / 16
}

__device__ __forceinline__ void umma_bf16(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                          uint32_t accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
      : "memory");
}

// Arrive once on `bar` when every tcgen05.mma issued so far by this thread has completed.
__device__ __forceinline__ void umma_commit(uint64_t* bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n" ::"r"(smem_u32(bar))
               : "memory");
}

__device__ __forceinline__ void tc_fence_before() {
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
}
__device__ __forceinline__ void tc_fence_after() { asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory"); }

// 32 lanes x 32 consecutive fp32 columns: thread i of the warp receives lane (base + i), columns [col, col+32).
__device__ __forceinline__ void tmem_ld_32x32b_x32(uint32_t taddr, uint32_t* r) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
      "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
        "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]),
        "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]),
        "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
      : "r"(taddr));
  asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
}

// ---- kernel --------------------------------------------------------------------------------------------

constexpr int BM = 128;  // UMMA M: one accumulator row per TMEM lane
constexpr int BN = 256;  // UMMA N: 256 fp32 TMEM columns
constexpr int BK = 64;   // one 128-byte swizzle row of bf16 per stage
constexpr int STAGES = 4;
constexpr int A_STAGE_BYTES = BM * BK * 2;
constexpr int B_STAGE_BYTES = BN * BK * 2;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + (2 * STAGES + 1) * 8 + 16;
constexpr int THREADS = 128;  // warp 0: TMA, warp 1: TMEM owner + MMA issue, all four: epilogue
constexpr uint32_t TMEM_COLS = BN;
constexpr uint32_t IDESC = umma_idesc_bf16(BM, BN);

__global__ void __launch_bounds__(THREADS, 1)
    gemm_tcgen05_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                        __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
  uint64_t* empty = full + STAGES;
  uint64_t* done = empty + STAGES;
  uint32_t* tmem_slot = reinterpret_cast<uint32_t*>(done + 1);

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int m_blk = blockIdx.y, n_blk = blockIdx.x;
  const int k_iters = K / BK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 1);  // one tcgen05.commit per stage
    }
    mbar_init(done, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    tma_prefetch_desc(&map_a);
    tma_prefetch_desc(&map_b);
  }
  if (warp == 1) {
    // The whole warp allocates the accumulator's tensor memory and publishes its address through smem.
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n" ::"r"(smem_u32(tmem_slot)),
                 "r"(TMEM_COLS)
                 : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
  }
  tc_fence_before();
  __syncthreads();
  tc_fence_after();
  const uint32_t tmem_d = *tmem_slot;

  if (warp == 0 && lane == 0) {
    // TMA producer.
    int stage = 0;
    uint32_t phase = 0;
    for (int kb = 0; kb < k_iters; ++kb) {
      mbar_wait(&empty[stage], phase ^ 1);
      uint8_t* sa = smem + stage * STAGE_BYTES;
      mbar_expect_tx(&full[stage], STAGE_BYTES);
      tma_load_2d(sa, &map_a, &full[stage], kb * BK, m_blk * BM);
      tma_load_2d(sa + A_STAGE_BYTES, &map_b, &full[stage], kb * BK, n_blk * BN);
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1;
      }
    }
  } else if (warp == 1 && lane == 0) {
    // MMA issuer: a single thread drives the tensor core; commits free each stage once its MMAs are done.
    int stage = 0;
    uint32_t phase = 0;
    for (int kb = 0; kb < k_iters; ++kb) {
      mbar_wait(&full[stage], phase);
      tc_fence_after();
      const uint32_t a_base = smem_u32(smem + stage * STAGE_BYTES);
      const uint32_t b_base = a_base + A_STAGE_BYTES;
#pragma unroll
      for (int k = 0; k < BK / 16; ++k) {
        umma_bf16(tmem_d, umma_desc_sw128(a_base + k * 32), umma_desc_sw128(b_base + k * 32), IDESC,
                  (kb > 0 || k > 0) ? 1u : 0u);
      }
      umma_commit(&empty[stage]);
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1;
      }
    }
    umma_commit(done);  // accumulator complete
  }
  __syncwarp();

  // Epilogue: warp w owns TMEM lanes [32w, 32w+32) = rows of the tile; 32 columns per tcgen05.ld.
  mbar_wait(done, 0);
  tc_fence_after();
  const int row = m_blk * BM + warp * 32 + lane;
  const uint32_t lane_addr = tmem_d + (static_cast<uint32_t>(warp * 32) << 16);
#pragma unroll 1
  for (int c = 0; c < BN; c += 32) {
    uint32_t v[32];
    tmem_ld_32x32b_x32(lane_addr + c, v);
    if (row < M) {
      uint4* dst = reinterpret_cast<uint4*>(C + static_cast<size_t>(row) * N + n_blk * BN + c);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        uint4 w;
        w.x = pack_bf16x2(__uint_as_float(v[q * 8 + 0]), __uint_as_float(v[q * 8 + 1]));
        w.y = pack_bf16x2(__uint_as_float(v[q * 8 + 2]), __uint_as_float(v[q * 8 + 3]));
        w.z = pack_bf16x2(__uint_as_float(v[q * 8 + 4]), __uint_as_float(v[q * 8 + 5]));
        w.w = pack_bf16x2(__uint_as_float(v[q * 8 + 6]), __uint_as_float(v[q * 8 + 7]));
        dst[q] = w;
      }
    }
  }
  tc_fence_before();
  __syncthreads();
  if (warp == 1) {
    tc_fence_after();
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n" ::"r"(tmem_d), "r"(TMEM_COLS) : "memory");
  }
}

// ---- host entry point ----------------------------------------------------------------------------------

namespace {

struct MapCache {
  const void* a = nullptr;
  const void* b = nullptr;
  int64_t m = -1, n = -1, k = -1;
  CUtensorMap map_a, map_b;
};

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
  if (N % BN != 0 || K % BK != 0) TVM_FFI_THROW(ValueError) << "N must be a multiple of 256 and K of 64";
  if (M == 0) return;

  static MapCache cache;
  if (cache.a != A.data_ptr() || cache.b != B.data_ptr() || cache.m != M || cache.n != N || cache.k != K) {
    cache.map_a = make_map_bf16_sw128(A.data_ptr(), M, K, BM);
    cache.map_b = make_map_bf16_sw128(B.data_ptr(), N, K, BN);
    cache.a = A.data_ptr();
    cache.b = B.data_ptr();
    cache.m = M;
    cache.n = N;
    cache.k = K;
  }
  static bool attr_set = false;
  if (!attr_set) {
    cudaFuncSetAttribute(gemm_tcgen05_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    attr_set = true;
  }
  DLDevice dev = A.device();
  cudaStream_t stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  dim3 grid(static_cast<unsigned>(N / BN), static_cast<unsigned>((M + BM - 1) / BM));
  gemm_tcgen05_kernel<<<grid, THREADS, SMEM_BYTES, stream>>>(cache.map_a, cache.map_b,
                                                             static_cast<__nv_bfloat16*>(C.data_ptr()),
                                                             static_cast<int>(M), static_cast<int>(N),
                                                             static_cast<int>(K));
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "launch failed: " << cudaGetErrorString(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
