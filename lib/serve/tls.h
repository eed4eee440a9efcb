#pragma once
// TLS under the connection layer (connections.h), over OpenSSL (Debian's
// libssl, which cpp-httplib is built against): the server's certificate
// chain and key (--ssl-cert, --ssl-key), and one session per connection on a
// non-blocking socket, whose every wait ends at a deadline, as the plain
// connection's do.
#include <sys/types.h>

#include <chrono>
#include <filesystem>

struct ssl_ctx_st;
struct ssl_st;

namespace mstar::serve {

class TlsContext {
 public:
  // Reads a PEM certificate chain (the server's first) and its private key,
  // TLS 1.2 and later. Throws InputError naming the file and OpenSSL's
  // reason, or saying the key does not match the certificate.
  TlsContext(const std::filesystem::path& cert, const std::filesystem::path& key);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ssl_ctx_st* get() const { return ctx_; }

 private:
  ssl_ctx_st* ctx_ = nullptr;
};

// Returned by TlsSession::read and write when the deadline passed first.
constexpr ssize_t kTimedOut = -2;

class TlsSession {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  // Over `fd`, which it makes non-blocking and does not close.
  TlsSession(const TlsContext& context, int fd);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // The handshake: false when it fails or the deadline passes first.
  [[nodiscard]] bool accept(Deadline deadline);
  // As recv and send: bytes (> 0), 0 when the client closed, -1 on an
  // error, kTimedOut.
  ssize_t read(char* p, std::size_t n, Deadline deadline);
  ssize_t write(const char* p, std::size_t n, Deadline deadline);
  // Decrypted bytes read from the socket and not yet handed out.
  [[nodiscard]] bool pending() const;
  // Whether the client has closed the connection (without waiting).
  [[nodiscard]] bool peer_closed();
  // Says close_notify to the client, without waiting for its answer.
  void shutdown();

 private:
  ssl_st* ssl_ = nullptr;
  const int fd_;
};

}  // namespace mstar::serve
