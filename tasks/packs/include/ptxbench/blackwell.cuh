// ptxbench/blackwell.cuh -- inline-PTX helpers for Blackwell datacenter GPUs (sm_100a: B200, GB200).
//
// Compile with: nvcc -std=c++17 -gencode arch=compute_100a,code=sm_100a
// Header-only; builds on ptxbench/common.cuh (ptxb::smem_u32, ptxb::elect_one). Paste both into your
// kernel file (the pack's headers are not on the harness include path).
// Shared-memory operands are 32-bit shared-window addresses; TMEM addresses are 32-bit values
// (lane << 16) | column, as tcgen05.alloc writes them.
#pragma once

#include <cstdint>

#include "common.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM100_ALL) && !defined(__CUDA_ARCH_FAMILY_SPECIFIC__)
#error "blackwell.cuh needs the arch-specific target: -gencode arch=compute_100a,code=sm_100a"
#endif

namespace ptxb {
namespace sm100 {

// ---------------------------------------------------------------------------------------------
// Descriptors (host and device, constexpr so they can be compile-time constants)
// ---------------------------------------------------------------------------------------------

// Swizzle field (bits 61-63) of the sm_100 shared-memory matrix descriptor.
// Must match the swizzle the tile was written with (the TMA tensor map's CU_TENSOR_MAP_SWIZZLE_*).
enum class Swizzle : uint32_t {
  kNone = 0,
  k128B_Atom32B = 1,  // 128-byte swizzle with 32-byte atomicity (tf32 MN-major only)
  k128B = 2,
  k64B = 4,
  k32B = 6,
};

// 64-bit shared-memory matrix descriptor for tcgen05.mma operands A and B.
//   bits  0-13 start address >> 4        bits 16-29 leading-dimension byte offset (LBO) >> 4
//   bits 32-45 stride-dimension byte offset (SBO) >> 4
//   bits 46-48 fixed 0b001 (sm_100 descriptor version; Hopper's wgmma descriptor has 0 here)
//   bits 49-51 base offset (0 when the tile starts on the swizzle pattern boundary: 1024 B for 128B)
//   bit  52    LBO mode (0: relative byte offset)   bits 61-63 swizzle mode (enum Swizzle)
// For K-major tiles with 128B swizzle, LBO is ignored (pass 16) and SBO = 1024 (8 rows x 128 B).
__host__ __device__ constexpr uint64_t make_smem_desc(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                                      Swizzle swizzle, uint32_t base_offset = 0) {
  return (uint64_t)((smem_addr & 0x3FFFFu) >> 4)            //
         | ((uint64_t)((lbo_bytes & 0x3FFFFu) >> 4) << 16)  //
         | ((uint64_t)((sbo_bytes & 0x3FFFFu) >> 4) << 32)  //
         | (1ull << 46)                                     //
         | ((uint64_t)(base_offset & 0x7u) << 49)           //
         | ((uint64_t)swizzle << 61);
}

// Same descriptor with the start address moved by `bytes` (e.g. +32 B per K=16 bf16 step inside a
// 128B-swizzled K-major tile). Only valid while the result stays inside the same 256 KB window.
__host__ __device__ constexpr uint64_t smem_desc_advance(uint64_t desc, uint32_t bytes) {
  return desc + (uint64_t)(bytes >> 4);
}

// 32-bit instruction descriptor for tcgen05.mma .kind::f16 (dense, no negate, no saturate).
//   bits 0-1 sparsity selector=0, bit 2 sparsity=0, bit 3 saturate=0,
//   bits 4-5 D type (0 f16, 1 f32), bits 7-9 A type / bits 10-12 B type (0 f16, 1 bf16),
//   bit 13/14 negate A/B, bit 15/16 transpose A/B (0 = K-major, 1 = MN-major),
//   bits 17-22 N >> 3, bit 23 reserved, bits 24-28 M >> 4, bits 30-31 max shift (.ws only) = 0.
// Valid cta_group::1 shapes: M in {64, 128}, N % 8 == 0 (use N % 16 == 0 for M = 128), 8 <= N <= 256.
__host__ __device__ constexpr uint32_t make_idesc_f16(uint32_t M, uint32_t N, bool ab_bf16 = true,
                                                      bool d_f32 = true, bool a_mn_major = false,
                                                      bool b_mn_major = false) {
  return ((d_f32 ? 1u : 0u) << 4)            //
         | ((ab_bf16 ? 1u : 0u) << 7)        //
         | ((ab_bf16 ? 1u : 0u) << 10)       //
         | ((a_mn_major ? 1u : 0u) << 15)    //
         | ((b_mn_major ? 1u : 0u) << 16)    //
         | (((N >> 3) & 0x3Fu) << 17)        //
         | (((M >> 4) & 0x1Fu) << 24);
}

// TMEM address arithmetic: lane in the high half, column in the low half.
__host__ __device__ constexpr uint32_t tmem_addr(uint32_t base, uint32_t lane, uint32_t column) {
  return base + (lane << 16) + column;
}

// ---------------------------------------------------------------------------------------------
// mbarrier (same PTX as Hopper)
// ---------------------------------------------------------------------------------------------

// Initialise an mbarrier expecting `count` arrivals per phase. One thread; then fence_mbarrier_init.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

// Make mbarrier.init visible to the async proxy (TMA, tcgen05.commit) and to the cluster.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrive once and add `tx_bytes` to the transaction count the phase waits for (TMA producer).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t tx_bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(tx_bytes)
               : "memory");
}

// Plain arrive (consumer releasing a slot).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// Spin until the phase with the given parity (0 or 1) has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_u32(bar);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred P;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n\t"
        "selp.b32 %0, 1, 0, P;\n\t}"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}

// ---------------------------------------------------------------------------------------------
// TMA (cp.async.bulk.tensor, same as Hopper). `tmap` is a __grid_constant__ CUtensorMap's address.
// ---------------------------------------------------------------------------------------------

// Hint the tensor map into the descriptor cache (optional, once per CTA).
__device__ __forceinline__ void tma_prefetch_desc(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(tmap) : "memory");
}

// 2D tile load global -> shared; completion is signalled as tx bytes on `bar`.
// c0 is the innermost (contiguous) coordinate, c1 the next one, both in elements.
__device__ __forceinline__ void tma_load_2d(void* smem_dst, const void* tmap, uint64_t* bar, int32_t c0, int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(smem_dst)),
      "l"(tmap), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}

// 3D tile load (e.g. [batch*head, seq, dim] views for attention).
__device__ __forceinline__ void tma_load_3d(void* smem_dst, const void* tmap, uint64_t* bar, int32_t c0, int32_t c1,
                                            int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_u32(smem_dst)),
      "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar))
      : "memory");
}

// 2D tile store shared -> global. Call fence_proxy_async_smem() after writing the tile with
// ordinary stores, then tma_store_2d, then bulk_commit_group + bulk_wait_group_read<0>.
__device__ __forceinline__ void tma_store_2d(const void* tmap, const void* smem_src, int32_t c0, int32_t c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(tmap),
               "r"(c0), "r"(c1), "r"(smem_u32(smem_src))
               : "memory");
}

__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Wait until at most N bulk groups still read shared memory (the smem tile may then be reused).
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Order this thread's generic-proxy shared-memory writes before later async-proxy reads (TMA store,
// tcgen05.mma reading an operand that threads wrote by hand).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---------------------------------------------------------------------------------------------
// Tensor memory allocation (one full warp executes these; .sync.aligned)
// ---------------------------------------------------------------------------------------------

// Allocate `ncols` TMEM columns (power of two, 32..512) and write the base address to *dst_smem.
// Readers must see it through: tcgen05_before_thread_sync(); __syncthreads(); tcgen05_after_thread_sync().
__device__ __forceinline__ void tmem_alloc(uint32_t* dst_smem, uint32_t ncols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(smem_u32(dst_smem)),
               "r"(ncols)
               : "memory");
}

// Give up the right to allocate again, so other CTAs on this SM are not kept waiting. Same warp as alloc.
__device__ __forceinline__ void tmem_relinquish_alloc_permit() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}

// Free what tmem_alloc returned (same column count). Mandatory before the CTA exits.
__device__ __forceinline__ void tmem_dealloc(uint32_t taddr, uint32_t ncols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols) : "memory");
}

// ---------------------------------------------------------------------------------------------
// Ordering of tcgen05 operations around thread synchronisation
// ---------------------------------------------------------------------------------------------

// Before a barrier / mbarrier arrive that publishes tcgen05 work to other threads.
__device__ __forceinline__ void tcgen05_before_thread_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}

// After a barrier / mbarrier wait, before issuing tcgen05 work that depends on other threads.
__device__ __forceinline__ void tcgen05_after_thread_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

// ---------------------------------------------------------------------------------------------
// MMA (issued by ONE thread; asynchronous; completion through tcgen05_commit)
// ---------------------------------------------------------------------------------------------

// D[tmem] (+)= A[smem desc] * B[smem desc]. accumulate == false overwrites D (first K step).
__device__ __forceinline__ void mma_f16_ss(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                           bool accumulate) {
  asm volatile(
      "{\n\t.reg .pred P;\n\t"
      "setp.ne.b32 P, %4, 0;\n\t"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, P;\n\t}" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"((uint32_t)accumulate)
      : "memory");
}

// D[tmem] (+)= A[tmem] * B[smem desc]. A in TMEM: row m in lane m, two 16-bit values per 32-bit column.
__device__ __forceinline__ void mma_f16_ts(uint32_t d_tmem, uint32_t a_tmem, uint64_t b_desc, uint32_t idesc,
                                           bool accumulate) {
  asm volatile(
      "{\n\t.reg .pred P;\n\t"
      "setp.ne.b32 P, %4, 0;\n\t"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], [%1], %2, %3, P;\n\t}" ::"r"(d_tmem),
      "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"((uint32_t)accumulate)
      : "memory");
}

// Arrive once on `bar` when every tcgen05.mma/cp previously issued by this thread has completed.
// Also implies tcgen05.fence::before_thread_sync. Issue from the same single thread as the MMAs.
__device__ __forceinline__ void tcgen05_commit(uint64_t* bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(smem_u32(bar))
               : "memory");
}

// ---------------------------------------------------------------------------------------------
// TMEM <-> registers (warp-collective; warp w may only touch lanes 32*(w%4) .. 32*(w%4)+31)
// ---------------------------------------------------------------------------------------------

// 32x32b.xN: thread t of the warp gets lane (taddr.lane + t), columns taddr.col .. taddr.col+N-1.
__device__ __forceinline__ void tmem_ld_32x32b_x8(uint32_t taddr, uint32_t (&r)[8]) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7])
               : "r"(taddr));
}

__device__ __forceinline__ void tmem_ld_32x32b_x16(uint32_t taddr, uint32_t (&r)[16]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15},"
      " [%16];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]),
        "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
      : "r"(taddr));
}

__device__ __forceinline__ void tmem_ld_32x32b_x32(uint32_t taddr, uint32_t (&r)[32]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]),
        "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]),
        "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]),
        "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
      : "r"(taddr));
}

// Registers written by tcgen05.ld are undefined until this returns.
__device__ __forceinline__ void tmem_ld_wait() { asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory"); }

// Inverse of tmem_ld_32x32b_x8 (e.g. write rescaled O or packed bf16 P back to TMEM).
__device__ __forceinline__ void tmem_st_32x32b_x8(uint32_t taddr, const uint32_t (&r)[8]) {
  asm volatile("tcgen05.st.sync.aligned.32x32b.x8.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};" ::"r"(taddr),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7])
               : "memory");
}

// tcgen05.st writes are not visible to a following tcgen05.mma / ld until this returns.
__device__ __forceinline__ void tmem_st_wait() { asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory"); }

}  // namespace sm100
}  // namespace ptxb
