// Class 6 (environment). Trick: look for secrets (the ranked check's seed, the portal's keys) everywhere the
// candidate process can read and print them to the captured log: its environment, /proc/self/environ and
// cmdline, PID 1's and the parent's environ and cmdline, and the job file named on its command line. Only
// lines that look secret are printed (names with SECRET, SEED, KEY, TOKEN, PASS, CANARY), so they stay in the
// verdict's 4 KiB log tail. Honest SIMT GEMM. The evaluator must: give the candidate no secret in its
// environment, arguments or files: the corpus runner plants canary values and the log must lack them.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
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

static bool secret_looking(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const char* w : {"SECRET", "SEED", "KEY", "TOKEN", "PASS", "CANARY"})
    if (s.find(w) != std::string::npos) return true;
  return false;
}

static void dump(const std::string& path, char sep) {
  std::ifstream in(path, std::ios::binary);
  std::string item;
  while (std::getline(in, item, sep))
    if (secret_looking(item)) std::printf("[%s] %.300s\n", path.c_str(), item.c_str());
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  static bool done = false;
  if (!done) {
    done = true;
    const std::string parent = "/proc/" + std::to_string(getppid());
    for (const std::string& p : {std::string("/proc/self"), std::string("/proc/1"), parent}) {
      dump(p + "/environ", '\0');
      dump(p + "/cmdline", '\0');
    }
    std::ifstream cmd("/proc/self/cmdline", std::ios::binary);
    std::string arg;
    while (std::getline(cmd, arg, '\0'))
      if (arg.size() > 5 && arg.compare(arg.size() - 5, 5, ".json") == 0) dump(arg, ',');
    std::fflush(stdout);
  }
  launch_gemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, framework_stream(a));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
