// ptxbench/hopper.cuh: inline-PTX wrappers for Hopper (sm_90a): wgmma, TMA, mbarrier, setmaxnreg, clusters.
// Build with -gencode arch=compute_90a,code=sm_90a (the `a` matters: wgmma and setmaxnreg need it).
// Paste the pieces you use into your kernel file together with ptxbench/common.cuh.
#pragma once
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include "common.cuh"

namespace ptxb::sm90 {

// ---- wgmma: fences and groups
// Order register/shared-memory writes before the next wgmma.mma_async reads them. Required before the first
// wgmma of a batch and whenever the accumulators or register-A fragments were touched by ordinary code.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Close the batch of wgmma.mma_async issued since the previous commit into one wgmma-group.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Wait until at most N wgmma-groups of this warp are still pending. N = 0 waits for all.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes an immediate 0..7");
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Compiler-only barrier on accumulator registers: stops nvcc from moving reads/writes of `d` across
// wgmma_commit/wgmma_wait (it cannot see that the asynchronous MMA still owns those registers).
template <int R>
__device__ __forceinline__ void fence_operands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// ---- shared-memory matrix descriptor
enum class Swizzle : uint32_t { kNone = 0, k128B = 1, k64B = 2, k32B = 3 };  // descriptor bits 62-63

// 64-bit wgmma matrix descriptor. Byte quantities are encoded >> 4 into 14-bit fields:
// bits 0-13 start address, 16-29 leading-dimension byte offset (LBO), 32-45 stride-dimension byte offset (SBO),
// 49-51 base offset (0 here: keep swizzled tiles 1024-byte aligned), 62-63 swizzle mode.
__device__ __forceinline__ uint64_t make_smem_desc(const void* smem_ptr, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                                   Swizzle swizzle) {
  const uint32_t addr = smem_u32(smem_ptr);
  uint64_t desc = 0;
  desc |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  desc |= static_cast<uint64_t>((lbo_bytes & 0x3FFFF) >> 4) << 16;
  desc |= static_cast<uint64_t>((sbo_bytes & 0x3FFFF) >> 4) << 32;
  desc |= static_cast<uint64_t>(swizzle) << 62;
  return desc;
}
// K-major bf16 tile whose rows are exactly 128 bytes (64 elements), loaded by TMA with 128B swizzle:
// 8-row swizzle atoms of 1024 B stacked along M/N, so SBO = 1024; LBO is unused for swizzled K-major (encode 1).
__device__ __forceinline__ uint64_t make_desc_kmajor_sw128(const void* tile) {
  return make_smem_desc(tile, 16, 1024, Swizzle::k128B);
}
// Advance a descriptor's start address by `bytes` (must be a multiple of 16), e.g. 32 B per k16 step inside a
// 128-byte swizzled row. Safe because shared addresses fit the 14-bit field without carry.
__device__ __forceinline__ uint64_t desc_advance(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

// ---- wgmma.mma_async, bf16 x bf16 -> f32
// scale_d: 0 -> D = A*B (accumulator input ignored), 1 -> D = A*B + D. TransA/TransB: 0 = K-major operand,
// 1 = MN-major (transposed) operand; only descriptor operands can be transposed.
#define PTXB_ACC8(d, i)                                                                                     \
  "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])

// D[64x64] (+)= A[64x16] * B[16x64], A and B from shared memory descriptors. d: 32 f32 per thread.
template <int TransA = 0, int TransB = 0>
__device__ __forceinline__ void wgmma_m64n64k16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %34, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, %35, %36;\n\t}"
      : PTXB_ACC8(d, 0),
        PTXB_ACC8(d, 8),
        PTXB_ACC8(d, 16),
        PTXB_ACC8(d, 24)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB));
}

// D[64x128] (+)= A[64x16] * B[16x128], A and B from shared memory descriptors. d: 64 f32 per thread.
template <int TransA = 0, int TransB = 0>
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, %67, %68;\n\t}"
      : PTXB_ACC8(d, 0),
        PTXB_ACC8(d, 8),
        PTXB_ACC8(d, 16),
        PTXB_ACC8(d, 24),
        PTXB_ACC8(d, 32),
        PTXB_ACC8(d, 40),
        PTXB_ACC8(d, 48),
        PTXB_ACC8(d, 56)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB));
}

// D[64x256] (+)= A[64x16] * B[16x256], A and B from shared memory descriptors. d: 128 f32 per thread.
template <int TransA = 0, int TransB = 0>
__device__ __forceinline__ void wgmma_m64n256k16_ss(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, %131, %132;\n\t}"
      : PTXB_ACC8(d, 0),
        PTXB_ACC8(d, 8),
        PTXB_ACC8(d, 16),
        PTXB_ACC8(d, 24),
        PTXB_ACC8(d, 32),
        PTXB_ACC8(d, 40),
        PTXB_ACC8(d, 48),
        PTXB_ACC8(d, 56),
        PTXB_ACC8(d, 64),
        PTXB_ACC8(d, 72),
        PTXB_ACC8(d, 80),
        PTXB_ACC8(d, 88),
        PTXB_ACC8(d, 96),
        PTXB_ACC8(d, 104),
        PTXB_ACC8(d, 112),
        PTXB_ACC8(d, 120)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB));
}

// D[64x64] (+)= A[64x16] * B[16x64], A from registers (4 x bf16x2 per thread, see the wgmma fragment), B from smem.
template <int TransB = 0>
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n\t}"
      : PTXB_ACC8(d, 0),
        PTXB_ACC8(d, 8),
        PTXB_ACC8(d, 16),
        PTXB_ACC8(d, 24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TransB));
}

// D[64x128] (+)= A[64x16] * B[16x128], A from registers (4 x bf16x2 per thread, see the wgmma fragment), B from smem.
template <int TransB = 0>
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n\t}"
      : PTXB_ACC8(d, 0),
        PTXB_ACC8(d, 8),
        PTXB_ACC8(d, 16),
        PTXB_ACC8(d, 24),
        PTXB_ACC8(d, 32),
        PTXB_ACC8(d, 40),
        PTXB_ACC8(d, 48),
        PTXB_ACC8(d, 56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TransB));
}

#undef PTXB_ACC8

// ---- mbarrier (64-bit object in shared memory)
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t arrive_count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrive_count) : "memory");
}
// Make initialised barriers visible to the async proxy (TMA) and to other CTAs of the cluster. Follow it with
// __syncthreads() (or a cluster barrier) before anyone uses the barriers.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Plain arrive (count 1), e.g. a consumer releasing a stage.
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
// Arrive (count 1) and add `bytes` to the transaction count the current phase waits for. Call it once per
// stage from the thread that issues the TMA loads, with the total bytes those loads deliver to this CTA.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
// Only raise the expected transaction count (no arrival).
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
// True once the phase with the given parity (0 or 1) has completed. A fresh barrier is in phase 0, so
// try_wait(parity=1) succeeds immediately: producers start waiting on "empty" barriers with parity 1.
__device__ __forceinline__ bool mbar_try_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}
// Arrive on the barrier at the same shared-memory offset in CTA `cta_rank` of this cluster (e.g. a consumer
// telling the CTA that multicasts into it that its stage is free).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta_rank) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\t"
      "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n\t}" ::"r"(smem_u32(bar)),
      "r"(cta_rank)
      : "memory");
}

// ---- proxy fences
// Generic-proxy writes to shared memory (st.shared, stmatrix) -> visible to the async proxy (TMA store, wgmma).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- TMA (cp.async.bulk.tensor)
// `map` must point to a __grid_constant__ kernel parameter (or global/const memory), never a local copy.
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// Load the box whose first element is at coordinates (c0 = innermost/contiguous dim, c1) into smem; completion
// is signalled as transaction bytes on `bar`. Out-of-bounds elements are zero-filled and still counted.
__device__ __forceinline__ void tma_load_2d(void* smem_dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::
          "r"(smem_u32(smem_dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(void* smem_dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::
          "r"(smem_u32(smem_dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// Same box delivered to the same smem offset (and same mbarrier offset) in every CTA whose bit is set in
// cta_mask (bit i = %cluster_ctarank i). Each destination barrier receives the box's bytes.
__device__ __forceinline__ void tma_load_2d_multicast(void* smem_dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                                      int c1, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(smem_u32(smem_dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "h"(cta_mask)
      : "memory");
}
// Store a box from smem to global (out-of-bounds parts are clipped). Issue fence_proxy_async_smem() and a
// barrier among the writing threads first, then from one thread: tma_store_2d(...); tma_store_commit();
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* smem_src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_u32(smem_src)), "r"(c0), "r"(c1)
               : "memory");
}
// Element-wise atomic add of a smem box into global (split-K partials, dQ accumulation); same rules as the store.
__device__ __forceinline__ void tma_reduce_add_2d(const CUtensorMap* map, const void* smem_src, int c0, int c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_u32(smem_src)), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Wait until at most N committed store groups still *read* shared memory (the smem may then be reused).
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Wait until at most N store groups are pending entirely (global writes done).
template <int N>
__device__ __forceinline__ void tma_store_wait_all() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- register reallocation (warp specialization)
// Executed by all threads of a warpgroup; N in [24, 256], multiple of 8. Needs a known per-thread budget:
// compile the kernel with __launch_bounds__(threads, 1).
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24..256, multiple of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg: 24..256, multiple of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// ---- clusters and distributed shared memory
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_nctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}
// Full cluster barrier (all threads of all CTAs): release our smem writes, acquire everyone else's.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Shared-window address of the same variable in CTA `cta_rank` of the cluster (use with ld/st.shared::cluster).
__device__ __forceinline__ uint32_t map_shared_rank(const void* smem_ptr, uint32_t cta_rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(smem_ptr)), "r"(cta_rank));
  return remote;
}
__device__ __forceinline__ void st_cluster_f32(uint32_t remote_addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(remote_addr), "f"(v) : "memory");
}
__device__ __forceinline__ float ld_cluster_f32(uint32_t remote_addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote_addr) : "memory");
  return v;
}

}  // namespace ptxb::sm90

// ---- host: tensor maps
namespace ptxb {

// 2D bf16 tensor map over a row-major matrix [rows, cols] with row pitch `row_stride_elems` (>= cols).
// The box is [box_rows, box_cols]; with 128B swizzle box_cols * 2 bytes must be <= 128 (so box_cols <= 64).
inline CUtensorMap make_tma_2d_bf16(const void* base, uint64_t rows, uint64_t cols, uint64_t row_stride_elems,
                                    uint32_t box_rows, uint32_t box_cols,
                                    CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
  static auto encode =
      reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(driver_entry_point("cuTensorMapEncodeTiled", 12000));
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};                     // innermost (contiguous) dimension first
  const cuuint64_t strides[1] = {row_stride_elems * 2};        // bytes, for dims 1..rank-1; multiple of 16
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  PTXB_CU_CHECK(encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
                       elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return map;
}

}  // namespace ptxb
