// Class 2 (only the submission's kernels count). Trick: load a module at run time and let its kernel do the
// work. The PTX of a naive GEMM is embedded as a string; cuModuleLoadData / cuModuleGetFunction / cuLaunchKernel
// come from cudaGetDriverEntryPoint (the route the ABI documents for TMA descriptors). The loaded kernel has
// exactly the same (mangled) name as the submission's own `gemm_tiled`, which is compiled in and never launched,
// so a check by kernel name alone is fooled. The evaluator must: identify the candidate's module by its contents
// (the cubin it compiled), not the kernel's name: FOREIGN_KERNEL, "not compiled from the submission".
#include <cuda.h>  // CUmodule / CUfunction types only; the driver functions are fetched at run time
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

static const char kPtx[] = R"PTX(
.version 8.0 .target sm_90a .address_size 64 .visible .entry _Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii(
.param .u64 _Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_0,
.param .u64 _Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_1,
.param .u64 _Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_2,
.param .u32 _Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_3,
.param .u32 _Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_4,
.param .u32 _Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_5 ) { .reg .pred 	%p<6>; .reg .b16 	%rs<4>;
.reg .f32 	%f<11>; .reg .b32 	%r<13>; .reg .b64 	%rd<24>;
ld.param.u64 	%rd7, [_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_0];
ld.param.u64 	%rd8, [_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_1];
ld.param.u64 	%rd9, [_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_2];
ld.param.u32 	%r7, [_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_3];
ld.param.u32 	%r5, [_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_4];
ld.param.u32 	%r6, [_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii_param_5]; mov.u32 	%r8, %ntid.x;
mov.u32 	%r9, %ctaid.x; mov.u32 	%r10, %tid.x; mad.lo.s32 	%r1, %r9, %r8, %r10; mov.u32 	%r2, %ctaid.y;
setp.ge.s32 	%p1, %r2, %r7; setp.ge.s32 	%p2, %r1, %r5; or.pred  	%p3, %p1, %p2; @%p3 bra 	$L__BB0_6;
setp.gt.s32 	%p4, %r6, 0; @%p4 bra 	$L__BB0_3; bra.uni 	$L__BB0_2; $L__BB0_3: mul.wide.s32 	%rd10, %r6, %r1;
cvta.to.global.u64 	%rd11, %rd8; shl.b64 	%rd12, %rd10, 1; add.s64 	%rd23, %rd11, %rd12;
mul.wide.s32 	%rd13, %r2, %r6; cvta.to.global.u64 	%rd14, %rd7; shl.b64 	%rd15, %rd13, 1;
add.s64 	%rd22, %rd14, %rd15; mov.f32 	%f10, 0f00000000; mov.u32 	%r12, 0; $L__BB0_4: .pragma "nounroll";
ld.global.nc.u16 	%rs1, [%rd22]; { cvt.f32.bf16 %f6, %rs1;} ld.global.nc.u16 	%rs2, [%rd23];
{ cvt.f32.bf16 %f7, %rs2;} fma.rn.f32 	%f10, %f6, %f7, %f10; add.s64 	%rd23, %rd23, 2;
add.s64 	%rd22, %rd22, 2; add.s32 	%r12, %r12, 1; setp.lt.s32 	%p5, %r12, %r6; @%p5 bra 	$L__BB0_4;
bra.uni 	$L__BB0_5; $L__BB0_2: mov.f32 	%f10, 0f00000000; $L__BB0_5: {  cvt.rn.bf16.f32 %rs3, %f10;}
mul.wide.s32 	%rd16, %r5, %r2; cvt.s64.s32 	%rd17, %r1; add.s64 	%rd18, %rd16, %rd17;
cvta.to.global.u64 	%rd19, %rd9; shl.b64 	%rd20, %rd18, 1; add.s64 	%rd21, %rd19, %rd20;
st.global.u16 	[%rd21], %rs3; $L__BB0_6: ret; }
)PTX";

typedef CUresult (*load_fn)(CUmodule*, const void*);
typedef CUresult (*get_fn)(CUfunction*, CUmodule, const char*);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);

static void* driver(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return p;
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static CUfunction fn = nullptr;
  static launch_fn launch = nullptr;
  if (fn == nullptr) {
    auto load = reinterpret_cast<load_fn>(driver("cuModuleLoadData"));
    auto get = reinterpret_cast<get_fn>(driver("cuModuleGetFunction"));
    launch = reinterpret_cast<launch_fn>(driver("cuLaunchKernel"));
    CUmodule mod = nullptr;
    if (!load || !get || !launch || load(&mod, kPtx) != CUDA_SUCCESS ||
        get(&fn, mod, "_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii") != CUDA_SUCCESS) {
      TVM_FFI_THROW(RuntimeError) << "could not load the embedded module";
    }
  }
  void *pa = a.data_ptr(), *pb = b.data_ptr(), *pc = c.data_ptr();
  void* params[] = {&pa, &pb, &pc, &m, &n, &k};
  if (launch(fn, (n + 255) / 256, m, 1, 256, 1, 1, 0, reinterpret_cast<CUstream>(stream), params, nullptr) !=
      CUDA_SUCCESS)
    TVM_FFI_THROW(RuntimeError) << "launch of the loaded kernel failed";
  if (m < 0) launch_gemm(pa, pb, pc, m, n, k, stream);  // never: keeps the submission's own kernel referenced
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
