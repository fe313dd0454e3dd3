// Starter kernel for the PTXBench attention-forward tasks at head dimension 256: O = softmax(Q K^T / sqrt(D)) V
// and the per-row log-sum-exp LSE (natural log), Q, K, V, O bf16 [B,H,S,256], LSE fp32 [B,H,S].
//
// Correct and deliberately simple: one thread block per (batch, head, block of 64 query rows), two threads per
// query row (each owns 128 of the 256 output columns, and the pair adds its halves of each dot product), keys
// streamed through shared memory 8 at a time, online softmax in fp32 on the CUDA cores. (The other head
// dimensions' starter gives a row one thread; at d=256 its accumulator and tiles outgrow the registers and the
// 48 KiB of static shared memory.) It uses no wgmma/TMA (sm_90a) or tcgen05 (sm_100a), so it passes the
// correctness layer and fails the architecture layer; replace the kernels, keep the `run` entry point. Sizes
// come from the tensors; only the mask is fixed per task (kCausal below).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

#include <cmath>
#include <cstdint>

namespace {

using tvm::ffi::TensorView;

// Causal tasks: query i attends keys j <= i (S_q == S_k, top-left aligned).
constexpr bool kCausal = false;

constexpr int kD = 256;               // head dimension
constexpr int kHalf = kD / 2;         // output columns per thread
constexpr int kBlockQ = 64;           // query rows per block
constexpr int kThreads = 2 * kBlockQ; // two threads per row, adjacent lanes of one warp
constexpr int kBlockK = 8;            // keys per shared-memory tile

template <bool CAUSAL>
__global__ void __launch_bounds__(kThreads) attention_forward(const __nv_bfloat16* __restrict__ Q,
                                                               const __nv_bfloat16* __restrict__ K,
                                                               const __nv_bfloat16* __restrict__ V,
                                                               __nv_bfloat16* __restrict__ O,
                                                               float* __restrict__ LSE, int64_t S, float scale) {
  // Own query rows are padded by one bf16 pair so that rows read at once fall in different banks.
  __shared__ __nv_bfloat162 q_rows[kBlockQ][kD / 2 + 1];
  __shared__ __nv_bfloat162 k_tile[kBlockK][kD / 2];
  __shared__ __nv_bfloat162 v_tile[kBlockK][kD / 2];

  const int t = threadIdx.x;
  const int row = t / 2;
  const int c0 = (t % 2) * (kHalf / 2);  // this thread's first bf16 pair of the row
  // Only the two threads of a row shuffle with each other; a pair whose row is past S skips the loop together.
  const unsigned pair_mask = 3u << ((t % 32) & ~1);
  const int64_t head = static_cast<int64_t>(blockIdx.z) * gridDim.y + blockIdx.y;  // b * H + h
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kBlockQ;
  const int64_t i = q0 + row;
  const bool active = i < S;
  const __nv_bfloat162* q2 = reinterpret_cast<const __nv_bfloat162*>(Q + head * S * kD);
  const __nv_bfloat162* k2 = reinterpret_cast<const __nv_bfloat162*>(K + head * S * kD);
  const __nv_bfloat162* v2 = reinterpret_cast<const __nv_bfloat162*>(V + head * S * kD);

  for (int idx = t; idx < kBlockQ * (kD / 2); idx += kThreads) {
    const int r = idx / (kD / 2), c = idx % (kD / 2);
    q_rows[r][c] = (q0 + r < S) ? q2[(q0 + r) * (kD / 2) + c] : __floats2bfloat162_rn(0.f, 0.f);
  }

  float acc[kHalf];
#pragma unroll
  for (int d = 0; d < kHalf; ++d) acc[d] = 0.f;
  float m = -INFINITY, l = 0.f;

  // Causal blocks never need keys past their last query row.
  const int64_t k_end = CAUSAL ? (q0 + kBlockQ < S ? q0 + kBlockQ : S) : S;
  for (int64_t k0 = 0; k0 < k_end; k0 += kBlockK) {
    __syncthreads();  // the previous tile is no longer read
    for (int idx = t; idx < kBlockK * (kD / 2); idx += kThreads) {
      const int r = idx / (kD / 2), c = idx % (kD / 2);
      const bool in = k0 + r < S;
      k_tile[r][c] = in ? k2[(k0 + r) * (kD / 2) + c] : __floats2bfloat162_rn(0.f, 0.f);
      v_tile[r][c] = in ? v2[(k0 + r) * (kD / 2) + c] : __floats2bfloat162_rn(0.f, 0.f);
    }
    __syncthreads();
    if (!active) continue;
    for (int jj = 0; jj < kBlockK; ++jj) {
      const int64_t j = k0 + jj;
      if (j >= S || (CAUSAL && j > i)) break;  // the same for both threads of the row
      float dot = 0.f;
#pragma unroll
      for (int c = 0; c < kHalf / 2; ++c) {
        const float2 a = __bfloat1622float2(q_rows[row][c0 + c]);
        const float2 b = __bfloat1622float2(k_tile[jj][c0 + c]);
        dot = fmaf(a.x, b.x, fmaf(a.y, b.y, dot));
      }
      dot += __shfl_xor_sync(pair_mask, dot, 1);  // both threads now hold the same full dot product
      const float s = dot * scale;
      if (s > m) {  // new running maximum: rescale what was accumulated so far
        const float correction = expf(m - s);
        l *= correction;
#pragma unroll
        for (int d = 0; d < kHalf; ++d) acc[d] *= correction;
        m = s;
      }
      const float p = expf(s - m);
      l += p;
#pragma unroll
      for (int c = 0; c < kHalf / 2; ++c) {
        const float2 v = __bfloat1622float2(v_tile[jj][c0 + c]);
        acc[2 * c] = fmaf(p, v.x, acc[2 * c]);
        acc[2 * c + 1] = fmaf(p, v.y, acc[2 * c + 1]);
      }
    }
  }
  if (!active) return;
  const float inv_l = 1.f / l;
  __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(O + (head * S + i) * kD) + c0;
#pragma unroll
  for (int c = 0; c < kHalf / 2; ++c) o2[c] = __floats2bfloat162_rn(acc[2 * c] * inv_l, acc[2 * c + 1] * inv_l);
  if (c0 == 0) LSE[head * S + i] = m + logf(l);
}

bool is_dtype(DLDataType t, uint8_t code, uint8_t bits) { return t.code == code && t.bits == bits && t.lanes == 1; }

template <typename T>
T* typed_ptr(const TensorView& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data_ptr()) + t.byte_offset());
}

void check_tensor(const TensorView& t, const char* name, int ndim, uint8_t code, const TensorView& like) {
  TVM_FFI_CHECK(t.ndim() == ndim, ValueError) << name << " must be " << ndim << "-D";
  TVM_FFI_CHECK(is_dtype(t.dtype(), code, code == kDLBfloat ? 16 : 32), ValueError) << name << " has the wrong dtype";
  TVM_FFI_CHECK(t.IsContiguous(), ValueError) << name << " must be contiguous";
  TVM_FFI_CHECK(t.device().device_type == kDLCUDA, ValueError) << name << " must be on a CUDA device";
  for (int d = 0; d < ndim; ++d) TVM_FFI_CHECK(t.size(d) == like.size(d), ValueError) << name << " has the wrong shape";
}

void launch(const TensorView& Q, const TensorView& K, const TensorView& V, const TensorView& O,
            const TensorView& LSE, cudaStream_t stream) {
  const int64_t B = Q.size(0), H = Q.size(1), S = Q.size(2);
  const dim3 grid(static_cast<unsigned>((S + kBlockQ - 1) / kBlockQ), static_cast<unsigned>(H),
                  static_cast<unsigned>(B));
  attention_forward<kCausal><<<grid, kThreads, 0, stream>>>(
      typed_ptr<const __nv_bfloat16>(Q), typed_ptr<const __nv_bfloat16>(K), typed_ptr<const __nv_bfloat16>(V),
      typed_ptr<__nv_bfloat16>(O), typed_ptr<float>(LSE), S, 1.0f / sqrtf(static_cast<float>(kD)));
}

void run_impl(TensorView Q, TensorView K, TensorView V, TensorView O, TensorView LSE) {
  check_tensor(Q, "Q", 4, kDLBfloat, Q);
  check_tensor(K, "K", 4, kDLBfloat, Q);
  check_tensor(V, "V", 4, kDLBfloat, Q);
  check_tensor(O, "O", 4, kDLBfloat, Q);
  check_tensor(LSE, "LSE", 3, kDLFloat, Q);
  if (Q.numel() == 0) return;
  const DLDevice dev = O.device();
  auto stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  TVM_FFI_CHECK(Q.size(3) == kD, ValueError) << "head dimension " << Q.size(3) << " is not " << kD;
  launch(Q, K, V, O, LSE, stream);
  const cudaError_t err = cudaGetLastError();
  TVM_FFI_CHECK(err == cudaSuccess, RuntimeError) << "kernel launch failed: " << cudaGetErrorString(err);
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
