#pragma once
// The connection layer under httplib's HTTP parsing and routing: the
// listening socket, the threads that serve connections, and each
// connection's socket as httplib reads and writes it (an httplib::Stream).
//
// httplib 0.11 (Debian 12's libcpp-httplib-dev) has its own, but it does not
// hold under abuse, as measured against this server: it reads any number of
// header lines (96 MB of them took the process to 618 MB), and a body sent
// chunked or without a Content-Length past any limit (100 MB read, +174 MB
// resident); its per-read timeout lets a client that sends a byte every few
// seconds hold a thread indefinitely; it writes without MSG_NOSIGNAL; and it
// queues accepted connections without bound. Here:
//
// - a request's head and body must arrive within the read timeout, counted
//   from when a thread takes the connection (408 otherwise);
// - the head may hold at most 64 KiB (431), the body the body limit (413),
//   however it is framed;
// - every write waits at most the write timeout;
// - `threads` connections are served at once and as many more wait for a
//   thread; one beyond those is answered 503 at once and closed;
// - one request per connection (the response says Connection: close), so no
//   connection holds a thread between requests and no unread rest of a
//   refused request is read as the next one;
// - with TLS (tls.h), the handshake too must end within the read timeout,
//   and the same limits hold for the decrypted bytes.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "serve/tls.h"

namespace mstar::serve {

struct ConnectionLimits {
  std::chrono::milliseconds read_timeout{5000};   // for the whole request, head and body
  std::chrono::milliseconds write_timeout{5000};  // for each write
  std::size_t max_head = 64 << 10;                // request line and headers
  std::size_t max_body = 1 << 20;
};

// Why the connection layer cut a request short (status 0: it did not), for
// the error handler, which runs on the same thread.
struct Refusal {
  int status = 0;
  std::string message;
};
Refusal& current_refusal();

class Connection final : public httplib::Stream {
 public:
  // `tls`: the connection's session after its handshake, or null (plain).
  Connection(int fd, const ConnectionLimits& limits, TlsSession* tls = nullptr);
  bool is_readable() const override;
  // The socket takes bytes within the write timeout and the client has not
  // closed its end (a peek reads end of file).
  bool is_writable() const override;
  ssize_t read(char* ptr, std::size_t size) override;
  ssize_t write(const char* ptr, std::size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }
  // Ends the connection after the response: no more bytes go out; what the
  // client still sends is read and dropped for a moment, so that closing
  // does not reset the connection under the response's last bytes.
  void close_gracefully();

 private:
  ssize_t refuse(int status, std::string message);
  const int fd_;
  TlsSession* const tls_;
  const ConnectionLimits limits_;
  const std::chrono::steady_clock::time_point deadline_;
  char buf_[4096];
  std::size_t pos_ = 0, len_ = 0;
  uint32_t tail_ = 0;  // the last four bytes handed out, to see the blank line that ends the head
  bool head_done_ = false;
  std::size_t head_bytes_ = 0, body_bytes_ = 0;
  std::string head_;  // the request line and headers, as they arrive (at most max_head bytes)
  // A POST, PUT or PATCH whose head gives neither Content-Length nor
  // Transfer-Encoding: its body is empty (RFC 9112, 6.3), so a read for it is
  // answered at once with 411 instead of waiting out the read timeout.
  bool unframed_body_ = false;
};

class Listener {
 public:
  using Serve = std::function<void(Connection&)>;
  // Binds and listens (backlog 1024); throws InputError naming the address.
  // With `tls` (outliving the listener) every connection is TLS: one whose
  // handshake fails or times out is closed unserved, and one refused for
  // lack of a thread is closed without an answer.
  Listener(const std::string& host, int port, int threads, ConnectionLimits limits, Serve serve,
           const TlsContext* tls = nullptr);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }
  int fd() const { return fd_; }
  void start();
  // Stops accepting, serves what was accepted, joins every thread.
  void stop();
  int64_t open() const;      // connections accepted and not yet closed
  int64_t refused() const;   // connections answered 503: every thread busy and the wait full

 private:
  void accept_loop();
  void work();

  const int threads_;
  const ConnectionLimits limits_;
  const Serve serve_;
  const TlsContext* const tls_;
  int fd_ = -1, port_ = -1;
  int wake_[2] = {-1, -1};  // stop() writes a byte: the accepting thread's poll returns
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<int> waiting_;
  bool stopping_ = false, started_ = false;
  int64_t open_ = 0, refused_ = 0;
};

}  // namespace mstar::serve
