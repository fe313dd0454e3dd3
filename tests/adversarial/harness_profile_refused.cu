// Harness rewrite / profiled call refused. As harness_cupti_blind.cu (kernel
// records switched off around a cuBLAS call in every timed call, an empty launch of its own kernel left for the
// records), but under the profiler it exits at once instead of running its own kernel, so that no profiled time
// exists to contradict the timed figures. Native code only. Expected: caught: the profiled call that cross-checks
// the timing gave nothing (held `profile_failed`), or FOREIGN_KERNEL where CUPTI still records cuBLAS.
#include <cstdlib>
#include <elf.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
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
static void* find_symbol(const std::string& library, const std::string& name) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return nullptr;
  char line[4096];
  uintptr_t base = 0;
  while (base == 0 && std::fgets(line, sizeof line, maps)) {
    unsigned long lo, hi, off;
    char perms[8];
    if (std::sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) == 4 && off == 0 &&
        std::strstr(line, library.c_str()) != nullptr)
      base = lo;
  }
  std::fclose(maps);
  if (base == 0) return nullptr;
  auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
  const Elf64_Dyn* dyn = nullptr;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_DYNAMIC) dyn = reinterpret_cast<const Elf64_Dyn*>(base + ph[i].p_vaddr);
  if (dyn == nullptr) return nullptr;
  uintptr_t symtab = 0, strtab = 0;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    if (dyn->d_tag == DT_SYMTAB) symtab = dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_STRTAB) strtab = dyn->d_un.d_ptr;
  }
  if (symtab < base) symtab += base;  // the loader may or may not have relocated these in place
  if (strtab < base) strtab += base;
  auto* sym = reinterpret_cast<const Elf64_Sym*>(symtab);
  for (; reinterpret_cast<uintptr_t>(sym) < strtab; ++sym)  // .dynsym precedes .dynstr
    if (sym->st_value != 0 && name == reinterpret_cast<const char*>(strtab + sym->st_name))
      return reinterpret_cast<void*>(base + sym->st_value);
  return nullptr;
}

extern char** environ;

static bool profiler_present() {
  for (char** e = environ; *e != nullptr; ++e)
    if (!std::strncmp(*e, "CUDA_INJECTION64_PATH=", 22) || !std::strncmp(*e, "NV_COMPUTE_PROFILER", 19) ||
        !std::strncmp(*e, "NV_NSIGHT", 9))
      return true;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  char line[4096];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, maps))
    found = std::strstr(line, "ToolsInjection") || std::strstr(line, "libnvperf") || std::strstr(line, "nsight");
  std::fclose(maps);
  return found;
}

typedef int (*create_fn)(void**);
typedef int (*set_stream_fn)(void*, cudaStream_t);
typedef int (*gemm_ex_fn)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                          const void*, void*, int, int, int, int);
typedef int (*activity_fn)(int);

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  cudaStream_t stream = framework_stream(a);
  static int state = -1;  // 0: honest, 1: blind the records
  static void* handle = nullptr;
  static gemm_ex_fn gemm = nullptr;
  static set_stream_fn set_stream = nullptr;
  static activity_fn disable = nullptr, enable = nullptr;
  if (state < 0) {
    state = 0;
    const std::string blas = std::string("cu") + "bl" + "as", tracer = std::string("cu") + "pti";
    const std::string blas_lib = "/lib" + blas + ".so", tracer_lib = "/lib" + tracer + ".so";
    disable = reinterpret_cast<activity_fn>(find_symbol(tracer_lib, tracer + "ActivityDisable"));
    enable = reinterpret_cast<activity_fn>(find_symbol(tracer_lib, tracer + "ActivityEnable"));
    auto create = reinterpret_cast<create_fn>(find_symbol(blas_lib, blas + "Create_v2"));
    set_stream = reinterpret_cast<set_stream_fn>(find_symbol(blas_lib, blas + "SetStream_v2"));
    gemm = reinterpret_cast<gemm_ex_fn>(find_symbol(blas_lib, blas + "GemmEx"));
    if (profiler_present()) std::_Exit(0);  // nothing to profile, nothing to compare
    if (disable && enable && create && set_stream && gemm && create(&handle) == 0) state = 1;
    std::printf("records blinded: %s\n", state ? "yes" : "no (computing honestly)");
  }
  if (state == 0) {
    launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, stream);
    return;
  }
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, 0, stream);  // the records the profiled call shows
  disable(10);  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
  set_stream(handle, stream);
  const float alpha = 1.f, beta = 0.f;
  gemm(handle, 1, 0, n, m, k, &alpha, b.data_ptr(), 14, k, a.data_ptr(), 14, k, &beta, c.data_ptr(), 14, n, 68, -1);
  enable(10);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
