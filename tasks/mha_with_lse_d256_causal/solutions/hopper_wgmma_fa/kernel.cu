// Hopper (sm_90a) attention forward with log-sum-exp for mha_with_lse_d256_causal: Q, K, V, O [B,H,S,256] bf16,
// LSE [B,H,S] fp32 (natural log), scale 1/sqrt(256), causal (key j <= query i).
// FlashAttention-style, the d128 reference kernel's design with tiles sized for d = 256: one CTA per (128 query
// rows, batch*head); TMA loads Q once (64 KiB) and streams K/V tiles of 64 keys (32 KiB each) through a 2-stage
// mbarrier pipeline (producer warpgroup); two consumer warpgroups of 64 query rows each compute S = Q K^T
// (64x64, wgmma with both operands in shared memory), an online softmax in registers, and O += P V with a
// 64x256 wgmma (P from registers, V in shared memory as the transposed B operand); the 64x256 fp32 output
// accumulator (128 registers a thread) stays in registers for the whole key loop.
// Not yet run on a GPU when written (built and its SASS checked with nvcc 13.0 only); see README.md.
#define CAUSAL 1
#include <cuda.h>  // CUtensorMap and enums only; the driver function is fetched at run time
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include <cstdint>
#include <cmath>

// ---- Hopper primitives: mbarriers, TMA, wgmma descriptors -------------------------------------------

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

// Shared-memory matrix descriptor for a tile written by TMA with 128-byte swizzle: rows of 128 bytes,
// 8-row core groups 1024 bytes apart (SBO). `lbo` only matters for MN-major operands spanning
// several 64-element swizzle atoms.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr, uint32_t lbo_bytes = 16) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>(1024 >> 4) << 32;
  d |= static_cast<uint64_t>(1) << 62;  // 128B swizzle
  return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keep the compiler from moving accumulator reads/writes across the asynchronous wgmma boundary.
template <int N>
__device__ __forceinline__ void fence_regs(float* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

template <uint32_t R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <uint32_t R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
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

// D[64x256] (+)= A[64x16] (registers, bf16x2) * B, B from shared memory (transpose flag 1), fp32 accumulate.
__device__ __forceinline__ void wgmma_m64n256k16_rs(float* d, const uint32_t* a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

// D[64x64] (+)= A[64x16] (registers, bf16x2) * B, B from shared memory (transpose flag 1), fp32 accumulate.
__device__ __forceinline__ void wgmma_m64n64k16_rs(float* d, const uint32_t* a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

// ---- kernel --------------------------------------------------------------------------------------------

constexpr int HEAD_DIM = 256;
constexpr int BLOCK_Q = 128;  // query rows per CTA: two consumer warpgroups of 64
constexpr int BLOCK_KV = 64;  // keys per pipeline stage: 64 keys x 256 d is 32 KiB, the S tile 32 registers
#ifndef KV_STAGES
#define KV_STAGES 2  // K/V pipeline depth: Q (64 KiB) + 2 x (K + V) (128 KiB) fits the 227 KiB of a CTA
#endif
constexpr int STAGES = KV_STAGES;
constexpr int THREADS = 384;                   // warpgroup 0 = producer, 1 and 2 = consumers
constexpr int CHUNKS = HEAD_DIM / 64;          // a tile is stored as four 64-column chunks (128-byte rows)
constexpr int Q_CHUNK_BYTES = BLOCK_Q * 128;   // 128 rows x 64 bf16 (one 128B-swizzled TMA box)
constexpr int KV_CHUNK_BYTES = BLOCK_KV * 128; // 64 rows x 64 bf16
constexpr int Q_TILE_BYTES = CHUNKS * Q_CHUNK_BYTES;
constexpr int KV_TILE_BYTES = CHUNKS * KV_CHUNK_BYTES;
constexpr int SMEM_BYTES = Q_TILE_BYTES + 2 * STAGES * KV_TILE_BYTES + 1024 + 8 * (1 + 3 * STAGES);
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory of one CTA on sm_90");
#ifndef PV_SPLIT
#define PV_SPLIT 0  // 1: P@V as four n64 wgmmas per k-step (one per 64-column chunk of V) instead of one n256
#endif

__global__ void __launch_bounds__(THREADS, 1)
    attn_fwd_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                    const __grid_constant__ CUtensorMap map_v, __nv_bfloat16* __restrict__ O,
                    float* __restrict__ LSE, int S, float scale_log2) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* sQ = smem;
  uint8_t* sK = sQ + Q_TILE_BYTES;            // STAGES tiles
  uint8_t* sV = sK + STAGES * KV_TILE_BYTES;  // STAGES tiles
  uint64_t* bars = reinterpret_cast<uint64_t*>(sV + STAGES * KV_TILE_BYTES);
  uint64_t* q_full = bars;
  uint64_t* k_full = bars + 1;
  uint64_t* v_full = k_full + STAGES;
  uint64_t* kv_empty = v_full + STAGES;

  const int num_q_blocks = S / BLOCK_Q;
  // Causal: the longest rows (last query blocks) start first so the tail of the grid is short.
  const int q_blk = CAUSAL ? (num_q_blocks - 1 - blockIdx.x) : blockIdx.x;
  const int bh = blockIdx.y;
  const int row_base = bh * S;  // first row of this (batch, head) in the [B*H*S, D] view
  // Causal: key blocks up to the query block's last row (two key blocks per query block).
  const int n_kv = CAUSAL ? ((q_blk + 1) * (BLOCK_Q / BLOCK_KV)) : (S / BLOCK_KV);
  const int wg = threadIdx.x / 128;
  const int tid_in_wg = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&k_full[s], 1);
      mbar_init(&v_full[s], 1);
      mbar_init(&kv_empty[s], 8);  // one arrive per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    tma_prefetch_desc(&map_q);
    tma_prefetch_desc(&map_k);
    tma_prefetch_desc(&map_v);
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<24>();
    if (tid_in_wg == 0) {
      const int q_row = row_base + q_blk * BLOCK_Q;
      mbar_expect_tx(q_full, Q_TILE_BYTES);
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) tma_load_2d(sQ + c * Q_CHUNK_BYTES, &map_q, q_full, c * 64, q_row);
      int stage = 0;
      uint32_t phase = 0;
      for (int j = 0; j < n_kv; ++j) {
        mbar_wait(&kv_empty[stage], phase ^ 1);
        const int kv_row = row_base + j * BLOCK_KV;
        uint8_t* k_dst = sK + stage * KV_TILE_BYTES;
        uint8_t* v_dst = sV + stage * KV_TILE_BYTES;
        mbar_expect_tx(&k_full[stage], KV_TILE_BYTES);
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) tma_load_2d(k_dst + c * KV_CHUNK_BYTES, &map_k, &k_full[stage], c * 64, kv_row);
        mbar_expect_tx(&v_full[stage], KV_TILE_BYTES);
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) tma_load_2d(v_dst + c * KV_CHUNK_BYTES, &map_v, &v_full[stage], c * 64, kv_row);
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    setmaxnreg_inc<240>();
    const int cw = wg - 1;
    const int warp = tid_in_wg / 32;
    const int lane = tid_in_wg % 32;
    // This thread's two query rows within the CTA's block (accumulator rows r and r+8).
    const int r_local = cw * 64 + warp * 16 + lane / 4;
    const int q_row0 = q_blk * BLOCK_Q + r_local;

    float o_acc[128];  // 64x256 fp32 per warpgroup: column group c8 (8 columns) is o_acc[4*c8 .. 4*c8+3]
    float s_acc[32];   // 64x64 scores
#pragma unroll
    for (int i = 0; i < 128; ++i) o_acc[i] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY};  // running max, in log2 units of scaled scores
    float l_run[2] = {0.f, 0.f};              // running sum of exp2(x - m)

    mbar_wait(q_full, 0);
    const uint32_t q_base = smem_u32(sQ) + cw * 64 * 128;  // this warpgroup's 64 rows in each Q chunk

    int stage = 0;
    uint32_t phase = 0;
    for (int j = 0; j < n_kv; ++j) {
      // S = Q K^T over d = 256: sixteen k16 steps, four in each 64-column chunk of Q and K.
      mbar_wait(&k_full[stage], phase);
      const uint32_t k_base = smem_u32(sK + stage * KV_TILE_BYTES);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
        const uint32_t q_off = (kk / 4) * Q_CHUNK_BYTES + (kk % 4) * 32;
        const uint32_t k_off = (kk / 4) * KV_CHUNK_BYTES + (kk % 4) * 32;
        wgmma_m64n64k16_ss(s_acc, desc_sw128(q_base + q_off), desc_sw128(k_base + k_off), kk > 0 ? 1 : 0);
      }
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs<32>(s_acc);

      // Online softmax on the two rows this thread holds (columns spread over the 4 lanes of a quad). Causal:
      // the last two key blocks reach past some of the block's rows; a block every row of this warpgroup
      // ends before (the last one, for the first warpgroup) is masked whole, and m_run is already finite
      // there (key 0 is in every row's first block), so it contributes exp2(-inf) = 0.
      const bool diag = CAUSAL && (j >= n_kv - BLOCK_Q / BLOCK_KV);
      float row_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int c8 = 0; c8 < 8; ++c8) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s_acc[c8 * 4 + e] * scale_log2;
          if (diag) {
            const int key = j * BLOCK_KV + c8 * 8 + (lane % 4) * 2 + (e & 1);
            if (key > q_row0 + (e >= 2 ? 8 : 0)) x = -INFINITY;
          }
          s_acc[c8 * 4 + e] = x;
          row_max[e >> 1] = fmaxf(row_max[e >> 1], x);
        }
      }
      float corr[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        row_max[r] = fmaxf(row_max[r], __shfl_xor_sync(0xffffffffu, row_max[r], 1));
        row_max[r] = fmaxf(row_max[r], __shfl_xor_sync(0xffffffffu, row_max[r], 2));
        const float m_new = fmaxf(m_run[r], row_max[r]);
        corr[r] = exp2f(m_run[r] - m_new);  // exp2(-inf) = 0 on the first block
        m_run[r] = m_new;
        l_run[r] *= corr[r];
      }
      uint32_t p_frag[16];
      float row_sum[2] = {0.f, 0.f};
#pragma unroll
      for (int c8 = 0; c8 < 8; ++c8) {
        const float p0 = exp2f(s_acc[c8 * 4 + 0] - m_run[0]);
        const float p1 = exp2f(s_acc[c8 * 4 + 1] - m_run[0]);
        const float p2 = exp2f(s_acc[c8 * 4 + 2] - m_run[1]);
        const float p3 = exp2f(s_acc[c8 * 4 + 3] - m_run[1]);
        row_sum[0] += p0 + p1;
        row_sum[1] += p2 + p3;
        // Accumulator layout of columns [16kk, 16kk+16) is the A-fragment layout of k-step kk.
        p_frag[c8 * 2 + 0] = pack_bf16x2(p0, p1);
        p_frag[c8 * 2 + 1] = pack_bf16x2(p2, p3);
      }
      l_run[0] += row_sum[0];
      l_run[1] += row_sum[1];
#pragma unroll
      for (int c8 = 0; c8 < 32; ++c8) {
        o_acc[c8 * 4 + 0] *= corr[0];
        o_acc[c8 * 4 + 1] *= corr[0];
        o_acc[c8 * 4 + 2] *= corr[1];
        o_acc[c8 * 4 + 3] *= corr[1];
      }

      // O += P V: V tile is [key][d] (d contiguous), i.e. MN-major for the B operand (transpose flag).
      mbar_wait(&v_full[stage], phase);
      const uint32_t v_base = smem_u32(sV + stage * KV_TILE_BYTES);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BLOCK_KV / 16; ++kk) {
        // 16 keys = 16 rows of 128 bytes; 8-key groups 1024 bytes apart (SBO), 64-column chunks of d
        // KV_CHUNK_BYTES apart (LBO, the stride between swizzle atoms along N).
#if PV_SPLIT
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
          wgmma_m64n64k16_rs(o_acc + 32 * c, &p_frag[kk * 4], desc_sw128(v_base + c * KV_CHUNK_BYTES + kk * 2048), 1);
        }
#else
        wgmma_m64n256k16_rs(o_acc, &p_frag[kk * 4], desc_sw128(v_base + kk * 2048, KV_CHUNK_BYTES), 1);
#endif
      }
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs<128>(o_acc);
      __syncwarp();
      if (lane == 0) mbar_arrive(&kv_empty[stage]);
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1;
      }
    }

    // Epilogue: each lane of a quad summed only its own columns; add the four partial sums (they share the
    // same running max, so the partials are directly comparable), then normalise and write O and the LSE.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
      l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
    }
    const float inv_l[2] = {1.f / l_run[0], 1.f / l_run[1]};
    __nv_bfloat16* o_row0 = O + (static_cast<size_t>(row_base) + q_row0) * HEAD_DIM;
    __nv_bfloat16* o_row1 = o_row0 + 8 * HEAD_DIM;
#pragma unroll
    for (int c8 = 0; c8 < 32; ++c8) {
      const int col = c8 * 8 + (lane % 4) * 2;
      *reinterpret_cast<uint32_t*>(o_row0 + col) =
          pack_bf16x2(o_acc[c8 * 4 + 0] * inv_l[0], o_acc[c8 * 4 + 1] * inv_l[0]);
      *reinterpret_cast<uint32_t*>(o_row1 + col) =
          pack_bf16x2(o_acc[c8 * 4 + 2] * inv_l[1], o_acc[c8 * 4 + 3] * inv_l[1]);
    }
    if (lane % 4 == 0) {
      constexpr float LN2 = 0.69314718055994530942f;
      LSE[row_base + q_row0] = (m_run[0] + log2f(l_run[0])) * LN2;
      LSE[row_base + q_row0 + 8] = (m_run[1] + log2f(l_run[1])) * LN2;
    }
  }
}

// ---- host entry point ----------------------------------------------------------------------------------

namespace {

struct MapCache {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t rows = -1;
  CUtensorMap map_q, map_k, map_v;
};

void check_tensor(const tvm::ffi::TensorView& t, const char* name, int ndim, uint8_t code, uint8_t bits) {
  DLDataType dt = t.dtype();
  if (t.ndim() != ndim || dt.code != code || dt.bits != bits || dt.lanes != 1) {
    TVM_FFI_THROW(ValueError) << name << " has the wrong rank or dtype";
  }
  if (t.device().device_type != kDLCUDA) TVM_FFI_THROW(ValueError) << name << " must be on a CUDA device";
}

}  // namespace

void run_impl(tvm::ffi::TensorView Q, tvm::ffi::TensorView K, tvm::ffi::TensorView V, tvm::ffi::TensorView O,
              tvm::ffi::TensorView L) {
  check_tensor(Q, "Q", 4, kDLBfloat, 16);
  check_tensor(K, "K", 4, kDLBfloat, 16);
  check_tensor(V, "V", 4, kDLBfloat, 16);
  check_tensor(O, "O", 4, kDLBfloat, 16);
  check_tensor(L, "LSE", 3, kDLFloat, 32);
  const int64_t B = Q.size(0), H = Q.size(1), S = Q.size(2), D = Q.size(3);
  for (const tvm::ffi::TensorView* t : {&K, &V, &O}) {
    if (t->size(0) != B || t->size(1) != H || t->size(2) != S || t->size(3) != D) {
      TVM_FFI_THROW(ValueError) << "Q, K, V and O must share the shape [B,H,S,D]";
    }
  }
  if (L.size(0) != B || L.size(1) != H || L.size(2) != S) TVM_FFI_THROW(ValueError) << "LSE must be [B,H,S]";
  if (D != HEAD_DIM || S % BLOCK_Q != 0) TVM_FFI_THROW(ValueError) << "needs D == 256 and S a multiple of 128";
  if (B * H * S == 0) return;

  const int64_t rows = B * H * S;
  static MapCache cache;
  if (cache.q != Q.data_ptr() || cache.k != K.data_ptr() || cache.v != V.data_ptr() || cache.rows != rows) {
    cache.map_q = make_map_bf16_sw128(Q.data_ptr(), rows, HEAD_DIM, BLOCK_Q);
    cache.map_k = make_map_bf16_sw128(K.data_ptr(), rows, HEAD_DIM, BLOCK_KV);
    cache.map_v = make_map_bf16_sw128(V.data_ptr(), rows, HEAD_DIM, BLOCK_KV);
    cache.q = Q.data_ptr();
    cache.k = K.data_ptr();
    cache.v = V.data_ptr();
    cache.rows = rows;
  }
  static bool attr_set = false;
  if (!attr_set) {
    cudaFuncSetAttribute(attn_fwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    attr_set = true;
  }
  DLDevice dev = Q.device();
  cudaStream_t stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(D)));
  dim3 grid(static_cast<unsigned>(S / BLOCK_Q), static_cast<unsigned>(B * H));
  attn_fwd_kernel<<<grid, THREADS, SMEM_BYTES, stream>>>(cache.map_q, cache.map_k, cache.map_v,
                                                         static_cast<__nv_bfloat16*>(O.data_ptr()),
                                                         static_cast<float*>(L.data_ptr()), static_cast<int>(S),
                                                         scale_log2);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "launch failed: " << cudaGetErrorString(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
