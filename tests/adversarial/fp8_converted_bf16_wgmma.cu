// FP8 GEMM task (gemm_fp8_n7168_k5120). Trick: not a cheat of the output or the clock, but of the label: the e4m3
// inputs are converted to bf16 scratch buffers (exactly: every e4m3 value is a bf16 value), the expert bf16 wgmma
// GEMM does the work, and a last pass scales C by scale_a * scale_b (rounded twice, within the task's 2e-2).
// Correct, timed honestly, and wgmma executes with its whole share of the FLOPs, but as HGMMA: the task's target is
// wgmma with FP8 operands (QGMMA). The evaluator must count only FP8 tensor-core work toward the FP8 task's share
// (TaskFamily.tensor_operands): PASSED, arch `token`, never `verified`.
#include <cuda.h>  // CUtensorMap and enums only; the driver function is fetched at run time
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include <cstdint>

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

// D[64x256] (+)= A[64x16] * B[256x16]^T, both operands from shared memory (K-major), fp32 accumulate.
__device__ __forceinline__ void wgmma_m64n256k16_ss(float* d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
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
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// ---- kernel --------------------------------------------------------------------------------------------

constexpr int BM = 128;            // rows of C per tile: two consumer warpgroups of 64 rows
constexpr int BN = 256;            // columns of C per tile: one m64n256 wgmma per consumer per k-step
constexpr int BK = 64;             // 64 bf16 = 128 bytes = one 128B swizzle row
constexpr int STAGES = 4;          // 4 x 48 KiB of shared memory in flight
constexpr int GROUP_M = 8;         // tile raster: 8 row-blocks share the B tiles they stream
constexpr int A_STAGE_BYTES = BM * BK * 2;
constexpr int B_STAGE_BYTES = BN * BK * 2;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 /* alignment slack */ + 2 * STAGES * 8;
constexpr int THREADS = 384;       // warpgroup 0 = producer, 1 and 2 = consumers

__device__ __forceinline__ void tile_coords(int tile, int num_m, int num_n, int& m_blk, int& n_blk) {
  const int per_group = GROUP_M * num_n;
  const int group = tile / per_group;
  const int first_m = group * GROUP_M;
  const int rows_in_group = min(num_m - first_m, GROUP_M);
  const int in_group = tile - group * per_group;
  m_blk = first_m + in_group % rows_in_group;
  n_blk = in_group / rows_in_group;
}

__global__ void __launch_bounds__(THREADS, 1)
    gemm_tma_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                          __nv_bfloat16* __restrict__ C, int M, int N, int K) {
  extern __shared__ uint8_t smem_raw[];
  // 128B-swizzled TMA tiles want 1024-byte alignment.
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
  uint64_t* empty = full + STAGES;

  const int wg = threadIdx.x / 128;
  const int tid_in_wg = threadIdx.x % 128;
  const int num_m = (M + BM - 1) / BM;
  const int num_n = N / BN;
  const int num_tiles = num_m * num_n;
  const int k_iters = K / BK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8);  // one arrive per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    tma_prefetch_desc(&map_a);
    tma_prefetch_desc(&map_b);
  }
  __syncthreads();

  if (wg == 0) {
    // Producer: one thread streams A and B k-slices for every tile this CTA owns.
    setmaxnreg_dec<40>();
    if (tid_in_wg == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        int m_blk, n_blk;
        tile_coords(tile, num_m, num_n, m_blk, n_blk);
        for (int kb = 0; kb < k_iters; ++kb) {
          mbar_wait(&empty[stage], phase ^ 1);
          uint8_t* sa = smem + stage * STAGE_BYTES;
          uint8_t* sb = sa + A_STAGE_BYTES;
          mbar_expect_tx(&full[stage], STAGE_BYTES);
          tma_load_2d(sa, &map_a, &full[stage], kb * BK, m_blk * BM);
          tma_load_2d(sb, &map_b, &full[stage], kb * BK, n_blk * BN);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    // Consumers: warpgroup (wg-1) owns rows [64*(wg-1), 64*wg) of each 128x256 tile.
    setmaxnreg_inc<232>();
    const int cw = wg - 1;
    const int warp = tid_in_wg / 32;
    const int lane = tid_in_wg % 32;
    float acc[128];
    int stage = 0;
    uint32_t phase = 0;
    for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
      int m_blk, n_blk;
      tile_coords(tile, num_m, num_n, m_blk, n_blk);
      int prev_stage = -1;
      for (int kb = 0; kb < k_iters; ++kb) {
        mbar_wait(&full[stage], phase);
        const uint32_t a_base = smem_u32(smem + stage * STAGE_BYTES) + cw * 64 * 128;
        const uint32_t b_base = smem_u32(smem + stage * STAGE_BYTES + A_STAGE_BYTES);
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < BK / 16; ++k) {
          // Advancing 16 bf16 (32 bytes) inside the swizzled 128-byte row is a plain start-address offset.
          wgmma_m64n256k16_ss(acc, desc_sw128(a_base + k * 32), desc_sw128(b_base + k * 32), (kb > 0 || k > 0) ? 1 : 0);
        }
        wgmma_commit();
        // Keep one k-slice of wgmma in flight; the slice before it is done and its stage can be refilled.
        wgmma_wait<1>();
        fence_regs<128>(acc);
        if (prev_stage >= 0) {
          __syncwarp();
          if (lane == 0) mbar_arrive(&empty[prev_stage]);
        }
        prev_stage = stage;
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
      wgmma_wait<0>();
      fence_regs<128>(acc);
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[prev_stage]);

      // Epilogue: fp32 -> bf16 pairs straight from the accumulator layout (row r, r+8; two columns each).
      const int row0 = m_blk * BM + cw * 64 + warp * 16 + lane / 4;
      const int col0 = n_blk * BN + (lane % 4) * 2;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int col = col0 + j * 8;
        if (row0 < M) {
          *reinterpret_cast<uint32_t*>(C + static_cast<size_t>(row0) * N + col) = pack_bf16x2(acc[j * 4 + 0], acc[j * 4 + 1]);
        }
        if (row0 + 8 < M) {
          *reinterpret_cast<uint32_t*>(C + static_cast<size_t>(row0 + 8) * N + col) = pack_bf16x2(acc[j * 4 + 2], acc[j * 4 + 3]);
        }
      }
    }
  }
}

// ---- the conversion (exact) and the scales, applied to C ---------------------------------------------------

__global__ void convert_e4m3(const __nv_fp8_e4m3* __restrict__ in, __nv_bfloat16* __restrict__ out, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = __float2bfloat16(static_cast<float>(in[i]));
  }
}

__global__ void scale_output(__nv_bfloat16* __restrict__ c, const float* __restrict__ scale_a,
                             const float* __restrict__ scale_b, size_t count) {
  const float s = *scale_a * *scale_b;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    c[i] = __float2bfloat16(__bfloat162float(c[i]) * s);
  }
}

namespace {

struct Scratch {
  __nv_bfloat16* a = nullptr;
  __nv_bfloat16* b = nullptr;
  size_t a_count = 0, b_count = 0;
  int64_t m = -1, n = -1, k = -1;
  CUtensorMap map_a, map_b;
};

bool is_dtype(DLDataType t, uint8_t code, uint8_t bits) { return t.code == code && t.bits == bits && t.lanes == 1; }

void check_gpu(const tvm::ffi::TensorView& t, int ndim, uint8_t code, uint8_t bits, const char* name) {
  if (t.ndim() != ndim || !is_dtype(t.dtype(), code, bits) || !t.IsContiguous()) {
    TVM_FFI_THROW(ValueError) << name << " has the wrong rank, dtype or layout";
  }
  if (t.device().device_type != kDLCUDA) TVM_FFI_THROW(ValueError) << name << " must be on a CUDA device";
}

void grow(__nv_bfloat16** buffer, size_t* have, size_t want) {
  if (*have >= want) return;
  if (*buffer != nullptr) cudaFree(*buffer);
  if (cudaMalloc(buffer, want * sizeof(__nv_bfloat16)) != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "no scratch";
  *have = want;
}

}  // namespace

void run_impl(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView scale_a,
              tvm::ffi::TensorView scale_b, tvm::ffi::TensorView C) {
  check_gpu(A, 2, kDLFloat8_e4m3fn, 8, "A");
  check_gpu(B, 2, kDLFloat8_e4m3fn, 8, "B");
  check_gpu(scale_a, 0, kDLFloat, 32, "scale_a");
  check_gpu(scale_b, 0, kDLFloat, 32, "scale_b");
  check_gpu(C, 2, kDLBfloat, 16, "C");
  const int64_t M = A.size(0), K = A.size(1), N = B.size(0);
  if (B.size(1) != K || C.size(0) != M || C.size(1) != N) TVM_FFI_THROW(ValueError) << "shape mismatch";
  if (N % BN != 0 || K % BK != 0) TVM_FFI_THROW(ValueError) << "N must be a multiple of 256 and K of 64";
  if (M == 0) return;

  static Scratch s;
  const size_t a_count = static_cast<size_t>(M) * K, b_count = static_cast<size_t>(N) * K;
  if (s.m != M || s.n != N || s.k != K) {
    grow(&s.a, &s.a_count, a_count);
    grow(&s.b, &s.b_count, b_count);
    s.map_a = make_map_bf16_sw128(s.a, M, K, BM);
    s.map_b = make_map_bf16_sw128(s.b, N, K, BN);
    s.m = M;
    s.n = N;
    s.k = K;
  }

  DLDevice dev = A.device();
  static int num_sms = 0;
  static bool attr_set = false;
  if (num_sms == 0) {
    cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev.device_id);
  }
  if (!attr_set) {
    cudaFuncSetAttribute(gemm_tma_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    attr_set = true;
  }
  cudaStream_t stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  const int blocks = 4 * num_sms;
  convert_e4m3<<<blocks, 256, 0, stream>>>(static_cast<const __nv_fp8_e4m3*>(A.data_ptr()), s.a, a_count);
  convert_e4m3<<<blocks, 256, 0, stream>>>(static_cast<const __nv_fp8_e4m3*>(B.data_ptr()), s.b, b_count);
  const int num_tiles = static_cast<int>(((M + BM - 1) / BM) * (N / BN));
  const int grid = num_tiles < num_sms ? num_tiles : num_sms;
  auto* c = static_cast<__nv_bfloat16*>(C.data_ptr());
  gemm_tma_wgmma_kernel<<<grid, THREADS, SMEM_BYTES, stream>>>(s.map_a, s.map_b, c, static_cast<int>(M),
                                                                static_cast<int>(N), static_cast<int>(K));
  scale_output<<<blocks, 256, 0, stream>>>(c, static_cast<const float*>(scale_a.data_ptr()),
                                           static_cast<const float*>(scale_b.data_ptr()), static_cast<size_t>(M) * N);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) TVM_FFI_THROW(RuntimeError) << "launch failed: " << cudaGetErrorString(err);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
