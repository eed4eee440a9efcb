#include "serve/connections.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar::serve {

using Clock = std::chrono::steady_clock;

namespace {

// Chunked framing (sizes, line ends, trailers) read beyond the body limit
// before a chunked body counts as too large.
constexpr std::size_t kFraming = 64 << 10;

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT32_MAX));
}

// poll() for one socket, retried when a signal interrupts it.
bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, timeout_ms);
    if (r >= 0) return r > 0;
    if (errno != EINTR) return false;
  }
}

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char host[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, host, sizeof host);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, host, sizeof host);
    port = ntohs(v6.sin6_port);
  }
  ip = host;
}

}  // namespace

Refusal& current_refusal() {
  thread_local Refusal r;
  return r;
}

Connection::Connection(int fd, const ConnectionLimits& limits, TlsSession* tls)
    : fd_(fd), tls_(tls), limits_(limits), deadline_(Clock::now() + limits.read_timeout) {}

bool Connection::is_readable() const {
  return pos_ < len_ || (tls_ && tls_->pending()) || wait_for(fd_, POLLIN, ms_left(deadline_));
}

bool Connection::is_writable() const {
  if (!wait_for(fd_, POLLOUT, static_cast<int>(limits_.write_timeout.count()))) return false;
  if (tls_) return !tls_->peer_closed();
  if (!wait_for(fd_, POLLIN, 0)) return true;  // nothing to read: the client has not closed
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

ssize_t Connection::refuse(int status, std::string message) {
  Refusal& r = current_refusal();
  if (r.status == 0) r = {status, std::move(message)};
  return -1;
}

namespace {

// Whether a request's head (request line and headers) asks for a body it
// does not frame: a method that carries one, without Content-Length or
// Transfer-Encoding (header names compared without case).
bool asks_unframed_body(std::string_view head) {
  const bool carries = head.rfind("POST ", 0) == 0 || head.rfind("PUT ", 0) == 0 || head.rfind("PATCH ", 0) == 0;
  if (!carries) return false;
  std::string lower(head);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("\r\ncontent-length:") == std::string::npos &&
         lower.find("\r\ntransfer-encoding:") == std::string::npos;
}

}  // namespace

ssize_t Connection::read(char* ptr, std::size_t size) {
  if (unframed_body_ && pos_ == len_)
    return refuse(411, "a request with a body needs Content-Length or Transfer-Encoding");
  if (pos_ == len_) {
    const auto late = [&] {
      return refuse(408, fmt::format("the request did not arrive within {} s", limits_.read_timeout.count() / 1000.0));
    };
    ssize_t n;
    if (tls_) {
      n = tls_->read(buf_, sizeof buf_, deadline_);
      if (n == kTimedOut) return late();
    } else {
      if (!wait_for(fd_, POLLIN, ms_left(deadline_))) return late();
      do n = ::recv(fd_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
    }
    if (n <= 0) return n;
    pos_ = 0;
    len_ = static_cast<std::size_t>(n);
  }
  const std::size_t n = std::min(size, len_ - pos_);
  // What httplib takes counts against the head's limit up to the blank line
  // that ends the head, then against the body's.
  for (std::size_t i = 0; i < n; ++i) {
    if (head_done_) {
      body_bytes_ += n - i;
      break;
    }
    tail_ = (tail_ << 8) | static_cast<unsigned char>(buf_[pos_ + i]);
    ++head_bytes_;
    if (head_.size() < limits_.max_head) head_ += buf_[pos_ + i];
    head_done_ = tail_ == 0x0d0a0d0a;  // "\r\n\r\n"
    if (head_done_) unframed_body_ = asks_unframed_body(head_);
  }
  if (!head_done_ && head_bytes_ > limits_.max_head)
    return refuse(431, fmt::format("the request's line and headers are larger than {} bytes", limits_.max_head));
  if (body_bytes_ > limits_.max_body + kFraming)
    return refuse(413, fmt::format("the request body is larger than {} bytes (--max-body)", limits_.max_body));
  std::memcpy(ptr, buf_ + pos_, n);
  pos_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t Connection::write(const char* ptr, std::size_t size) {
  if (tls_) {
    const ssize_t n = tls_->write(ptr, size, Clock::now() + limits_.write_timeout);
    return n == kTimedOut ? -1 : n;
  }
  if (!wait_for(fd_, POLLOUT, static_cast<int>(limits_.write_timeout.count()))) return -1;
  ssize_t n;
  do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);  // a closed connection is an error, not SIGPIPE
  while (n < 0 && errno == EINTR);
  return n;
}

void Connection::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
}

void Connection::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) address_of(a, ip, port);
}

void Connection::close_gracefully() {
  if (tls_) tls_->shutdown();
  ::shutdown(fd_, SHUT_WR);
  const auto until = Clock::now() + std::chrono::milliseconds(500);
  char scratch[4096];
  for (std::size_t drained = 0; drained < (1 << 20) && wait_for(fd_, POLLIN, ms_left(until));) {
    const ssize_t n = ::recv(fd_, scratch, sizeof scratch, 0);
    if (n <= 0) break;
    drained += static_cast<std::size_t>(n);
  }
  ::close(fd_);
}

Listener::Listener(const std::string& host, int port, int threads, ConnectionLimits limits, Serve serve,
                   const TlsContext* tls)
    : threads_(threads), limits_(limits), serve_(std::move(serve)), tls_(tls) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    throw InputError(fmt::format("cannot listen on {}:{}: {}", host, port, gai_strerror(rc)));
  int error = 0;
  for (addrinfo* a = found; a && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // A burst of clients connecting at once (64 in tools/serve-load.sh) must
    // not overflow the backlog: a dropped connection retries after a second.
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      fd_ = fd;
    } else {
      error = errno;
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) throw InputError(fmt::format("cannot listen on {}:{}: {}", host, port, std::strerror(error)));
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  std::string ip;
  address_of(a, ip, port_);
  if (::pipe2(wake_, O_CLOEXEC) != 0) {
    ::close(fd_);
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
}

Listener::~Listener() {
  stop();
  ::close(fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void Listener::start() {
  started_ = true;
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { work(); });
  acceptor_ = std::thread([this] { accept_loop(); });
}

void Listener::accept_loop() {
  pollfd p[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  for (;;) {
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents) return;
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      // Out of descriptors or memory: the listening socket stays readable,
      // so without a pause this would spin.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    const int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // events are small and must leave at once
    bool busy;
    {
      std::lock_guard lock(m_);
      // Counted by open connections, not by the queue's length: whether a
      // thread has already taken a connection from the queue is a race the
      // client cannot see, so the 2 * threads + 1st connection is refused
      // however quickly the threads were scheduled.
      busy = open_ >= 2 * static_cast<int64_t>(threads_);
      if (busy) ++refused_;
      else waiting_.push_back(c), ++open_;
    }
    if (!busy) {
      cv_.notify_one();
      continue;
    }
    if (tls_) {  // no plain answer to a client that speaks TLS, and no handshake on this thread
      ::close(c);
      continue;
    }
    const std::string body = fmt::format("{{\"error\":\"too many connections: {} served and {} waiting\"}}\n", threads_, threads_);
    const std::string answer = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 1\r\n"
        "Connection: close\r\n\r\n{}",
        body.size(), body);
    // Never blocks the accepting thread: what the socket does not take at once is dropped.
    [[maybe_unused]] const ssize_t n = ::send(c, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::close(c);
  }
}

void Listener::work() {
  // OpenSSL writes to the socket with write(), which raises SIGPIPE when the
  // client has gone; blocked on this thread, the write fails with EPIPE
  // instead (a plain connection sends with MSG_NOSIGNAL).
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  for (;;) {
    int fd;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return !waiting_.empty() || stopping_; });
      if (waiting_.empty()) return;  // stopping, and every accepted connection served
      fd = waiting_.front();
      waiting_.pop_front();
    }
    std::optional<TlsSession> tls;
    if (tls_) {
      tls.emplace(*tls_, fd);
      if (!tls->accept(Clock::now() + limits_.read_timeout)) {
        tls.reset();
        ::close(fd);
        std::lock_guard lock(m_);
        --open_;
        continue;
      }
    }
    {
      Connection c(fd, limits_, tls ? &*tls : nullptr);
      current_refusal() = {};
      serve_(c);
      c.close_gracefully();
    }
    std::lock_guard lock(m_);
    --open_;
  }
}

void Listener::stop() {
  if (!started_) return;
  started_ = false;
  const char b = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_[1], &b, 1);
  acceptor_.join();
  {
    std::lock_guard lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

int64_t Listener::open() const {
  std::lock_guard lock(m_);
  return open_;
}

int64_t Listener::refused() const {
  std::lock_guard lock(m_);
  return refused_;
}

}  // namespace mstar::serve
