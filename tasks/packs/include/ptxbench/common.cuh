// ptxbench/common.cuh: architecture-neutral helpers for PTXBench kernels (paste what you need into your .cu).
#pragma once
#include <cuda.h>  // driver API *types* only (CUtensorMap, CUresult); nothing here links libcuda
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <stdexcept>
#include <string>

// Host-side error checks: throw, TVM-FFI turns a C++ exception into a Python error for the harness.
#define PTXB_CUDA_CHECK(expr)                                                                          \
  do {                                                                                                 \
    cudaError_t ptxb_err_ = (expr);                                                                    \
    if (ptxb_err_ != cudaSuccess)                                                                      \
      throw std::runtime_error(std::string(#expr " failed: ") + cudaGetErrorString(ptxb_err_));       \
  } while (0)

#define PTXB_CU_CHECK(expr)                                                                            \
  do {                                                                                                 \
    CUresult ptxb_res_ = (expr);                                                                       \
    if (ptxb_res_ != CUDA_SUCCESS)                                                                     \
      throw std::runtime_error(std::string(#expr " failed with CUresult ") + std::to_string(ptxb_res_)); \
  } while (0)

namespace ptxb {

// Look up a driver API entry point without linking libcuda. `cuda_version` is the ABI version of the
// prototype you cast to (12000 for the CUDA 12.0 signatures in cudaTypedefs.h, e.g. PFN_cuTensorMapEncodeTiled_v12000).
inline void* driver_entry_point(const char* symbol, unsigned int cuda_version = 12000) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  PTXB_CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, cuda_version, cudaEnableDefault, &query));
  if (query != cudaDriverEntryPointSuccess || fn == nullptr)
    throw std::runtime_error(std::string("driver entry point not found: ") + symbol);
  return fn;
}

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// 32-bit shared-window address of a generic pointer into shared memory: what PTX `.shared` operands take.
__device__ __forceinline__ uint32_t smem_u32(const void* ptr) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }
__device__ __forceinline__ int warp_id() { return threadIdx.x >> 5; }
// Warp-uniform copy of a value (helps the compiler keep it in a uniform register).
__device__ __forceinline__ int warp_uniform(int v) { return __shfl_sync(0xffffffffu, v, 0); }

// elect.sync (sm_90+): true in exactly one active lane of the warp. Cheaper than lane_id()==0 in loops.
__device__ __forceinline__ bool elect_one() {
  uint32_t pred = 0;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "elect.sync _|p, 0xffffffff;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(pred));
  return pred != 0;
}

// Pack two floats into one .b32 holding two bf16 (low half = lo): the register form wgmma/mma A operands use.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // first source goes to the upper half
  return r;
}

}  // namespace ptxb
