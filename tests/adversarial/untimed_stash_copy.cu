// Class "untimed work". Trick: a std::thread started by the first `run` watches every lent slot it has seen, from
// its own stream, while the harness idles between rounds. The parent poisons a round's outputs before it draws;
// once a slot's output reads NaN and the next slot's A changes (the parent draws the slots in order on one stream,
// so slot k is complete), the thread computes slot k's C into a private stash and seals it with a fingerprint of
// the inputs it used. `run` then waits for the stash and copies it in when the fingerprint matches the inputs it
// was given (else it computes honestly), so the GEMM runs while the parent is still drawing and before `go`.
// The evaluator must: start its clock before any input exists in a slot, so the stashed work is inside the span:
// PASSED no faster than the honest SIMT GEMM (or a wrong output caught), never a rank above it.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

using bf16 = __nv_bfloat16;
constexpr int kMaxSlots = 64, kSamples = 7;  // samples: A first/mid/last, B first/mid/last, C first

// Honest tiled SIMT GEMM (as tests/kernels/simt_gemm.cu), C = A @ B^T; returns at once when *skip is set.
__global__ void gemm_tiled(const bf16* __restrict__ a, const bf16* __restrict__ b, bf16* __restrict__ c, int m, int n,
                           int k, const int* skip) {
  if (skip != nullptr && *(volatile const int*)skip) return;
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
    for (int kk = 0; kk < 32; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] += as[ty * 4 + i][kk] * bs[tx][kk];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i, col = col0 + tx;
    if (r < m && col < n) c[(size_t)r * n + col] = __float2bfloat16(acc[i]);
  }
}

struct Shape { size_t na, nb, nc; };
struct Table { const uint16_t* a[kMaxSlots]; const uint16_t* b[kMaxSlots]; const uint16_t* c[kMaxSlots]; };

__device__ uint16_t sample(const uint16_t* p, size_t n, int j) {
  return *(volatile const uint16_t*)(p + (j == 0 ? 0 : j == 1 ? n / 2 : n - 1));
}
__global__ void poll(Table t, Shape s, uint16_t* out) {  // one block per slot
  const int i = blockIdx.x, j = threadIdx.x;
  if (j < 3) out[i * kSamples + j] = sample(t.a[i], s.na, j);
  else if (j < 6) out[i * kSamples + j] = sample(t.b[i], s.nb, j - 3);
  else if (j == 6) out[i * kSamples + j] = *(volatile const uint16_t*)t.c[i];
}
__global__ void seal(const uint16_t* a, const uint16_t* b, Shape s, uint16_t* expect) {  // after the stash is done
  const int j = threadIdx.x;
  if (j < 3) expect[j] = sample(a, s.na, j);
  else if (j < 6) expect[j] = sample(b, s.nb, j - 3);
}
__global__ void copy_or_flag(const uint16_t* a, const uint16_t* b, Shape s, const uint16_t* expect,
                             const int4* stash, int4* c, int* skip) {
  bool same = true;
  for (int j = 0; j < 6; ++j)
    same = same && (j < 3 ? sample(a, s.na, j) : sample(b, s.nb, j - 3)) == *(volatile const uint16_t*)(expect + j);
  if (blockIdx.x == 0 && threadIdx.x == 0) *skip = same;
  if (!same) return;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < s.nc * 2 / 16; i += gridDim.x * blockDim.x)
    c[i] = stash[i];
}

struct Slot {
  const bf16 *a, *b; bf16* c; bf16* stash; uint16_t* expect; cudaEvent_t done;
  bool armed = false, stashed = false, needs_clear = true; uint64_t clear_seq = 0; uint16_t armed_fp[kSamples] = {};
};
static std::mutex mu;
static std::vector<Slot> slots;  // sorted by the address of A: the parent's slot order
static uint64_t seq = 0;
static int M, N, K, device;
static int* skip_flag;

static bool is_nan(uint16_t v) { return (v & 0x7f80) == 0x7f80 && (v & 0x7f) != 0; }

static void watch() {
  cudaSetDevice(device);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  uint16_t *dev_fp, *fp;
  cudaMalloc(&dev_fp, kMaxSlots * kSamples * 2);
  cudaMallocHost(&fp, kMaxSlots * kSamples * 2);
  const Shape sh{(size_t)M * K, (size_t)N * K, (size_t)M * N};
  for (;;) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    Table t{};
    uint64_t launched;
    size_t n;
    {
      std::lock_guard<std::mutex> lock(mu);
      n = slots.size();
      for (size_t i = 0; i < n; ++i) {
        t.a[i] = (const uint16_t*)slots[i].a, t.b[i] = (const uint16_t*)slots[i].b;
        t.c[i] = (const uint16_t*)slots[i].c;
      }
      launched = seq;
    }
    if (n == 0) continue;
    poll<<<n, 32, 0, s>>>(t, sh, dev_fp);
    cudaMemcpyAsync(fp, dev_fp, n * kSamples * 2, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    std::unique_lock<std::mutex> lock(mu);
    if (slots.size() != n) continue;  // a slot was learned meanwhile: the indices moved
    for (size_t i = 0; i < n; ++i) {  // a call's output seen written, then poisoned again: a new round began
      Slot& x = slots[i];
      const uint16_t* f = fp + i * kSamples;
      if (x.needs_clear && !is_nan(f[6]) && launched >= x.clear_seq) x.needs_clear = false;
      else if (!x.needs_clear && !x.armed && is_nan(f[6]))
        x.armed = true, x.stashed = false, std::copy(f, f + kSamples, x.armed_fp);
    }
    for (size_t i = 0; i + 1 < n; ++i) {  // slot i+1's A began to change: slot i is drawn in full
      Slot &x = slots[i], &next = slots[i + 1];
      const uint16_t* f = fp + (i + 1) * kSamples;
      if (!x.armed || x.stashed || !next.armed || std::equal(f, f + 3, next.armed_fp)) continue;
      gemm_tiled<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 8), 0, s>>>(x.a, x.b, x.stash, M, N, K, nullptr);
      seal<<<1, 32, 0, s>>>((const uint16_t*)x.a, (const uint16_t*)x.b, sh, x.expect);
      cudaEventRecord(x.done, s);
      x.stashed = true;
    }
  }
}

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  M = a.shape()[0], K = a.shape()[1], N = b.shape()[0], device = a.device().device_id;
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(a.device().device_type, device));
  static std::once_flag started;
  std::call_once(started, [] { cudaMalloc(&skip_flag, sizeof(int)); std::thread(watch).detach(); });
  Slot x{static_cast<const bf16*>(a.data_ptr()), static_cast<const bf16*>(b.data_ptr()),
         static_cast<bf16*>(c.data_ptr())};
  const Shape sh{(size_t)M * K, (size_t)N * K, (size_t)M * N};
  bool wait = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto at = std::find_if(slots.begin(), slots.end(), [&](const Slot& s) { return s.c == x.c; });
    if (at == slots.end() && slots.size() < kMaxSlots) {
      cudaMalloc(&x.stash, (size_t)M * N * 2);
      cudaMalloc(&x.expect, 16);
      cudaMemset(x.expect, 0xff, 16);
      cudaEventCreateWithFlags(&x.done, cudaEventDisableTiming);
      auto by_a = [](const Slot& l, const Slot& r) { return l.a < r.a; };
      at = slots.insert(std::upper_bound(slots.begin(), slots.end(), x, by_a), x);
    }
    if (at != slots.end()) {
      wait = at->stashed, x = *at;
      at->armed = at->stashed = false, at->needs_clear = true, at->clear_seq = ++seq;
    }
  }
  const int* skip = nullptr;
  if (wait) {
    cudaStreamWaitEvent(stream, x.done, 0);
    copy_or_flag<<<132, 256, 0, stream>>>((const uint16_t*)x.a, (const uint16_t*)x.b, sh, x.expect,
                                          (const int4*)x.stash, (int4*)x.c, skip_flag);
    skip = skip_flag;
  }
  gemm_tiled<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 8), 0, stream>>>(x.a, x.b, x.c, M, N, K, skip);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
