#include "serve/tls.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <climits>
#include <system_error>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "core/errors.h"

namespace mstar::serve {

namespace {

// OpenSSL's reasons for the last failure on this thread, and a clean queue.
std::string openssl_reason() {
  std::string out;
  char buf[256];
  while (const unsigned long e = ERR_get_error()) {
    ERR_error_string_n(e, buf, sizeof buf);
    out += out.empty() ? buf : std::string("; ") + buf;
  }
  return out.empty() ? "no reason given" : out;
}

// A certificate or key file must be a regular file of sensible size before
// OpenSSL reads it: /dev/zero in its place would be read without end.
void check_pem_file(const std::filesystem::path& path, const char* option) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw InputError(fmt::format("{} {}: no such file", option, path.string()));
  if (!std::filesystem::is_regular_file(status))
    throw InputError(fmt::format("{} {}: is not a regular file", option, path.string()));
  if (std::filesystem::file_size(path, ec) > (1u << 20))
    throw InputError(fmt::format("{} {}: larger than 1 MiB, not a PEM certificate or key", option, path.string()));
}

bool wait_for(int fd, short events, TlsSession::Deadline deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int r = ::poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX)));
    if (r >= 0) return r > 0;
    if (errno != EINTR) return false;
  }
}

}  // namespace

TlsContext::TlsContext(const std::filesystem::path& cert, const std::filesystem::path& key) {
  check_pem_file(cert, "--ssl-cert");
  check_pem_file(key, "--ssl-key");
  ERR_clear_error();
  ctx_ = SSL_CTX_new(TLS_server_method());
  if (!ctx_) throw std::runtime_error("SSL_CTX_new: " + openssl_reason());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  // httplib may retry a write with the same bytes at another address.
  SSL_CTX_set_mode(ctx_, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const auto fail = [&](std::string message) {
    SSL_CTX_free(ctx_);
    ctx_ = nullptr;
    throw InputError(std::move(message));
  };
  if (SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()) != 1)
    fail(fmt::format("--ssl-cert {}: not a PEM certificate chain: {}", cert.string(), openssl_reason()));
  const std::string mismatch =
      fmt::format("--ssl-key {} is not the key of the certificate in --ssl-cert {}", key.string(), cert.string());
  if (SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL 3 compares the key with the certificate as it loads it.
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      fail(mismatch);
    }
    fail(fmt::format("--ssl-key {}: not a PEM private key: {}", key.string(), openssl_reason()));
  }
  if (SSL_CTX_check_private_key(ctx_) != 1) fail(mismatch);
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsSession::TlsSession(const TlsContext& context, int fd) : ssl_(SSL_new(context.get())), fd_(fd) {
  if (!ssl_) throw std::runtime_error("SSL_new: " + openssl_reason());
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  SSL_set_fd(ssl_, fd_);
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

namespace {

// What to do after an SSL call returned r: wait for the socket (true), or
// stop (false, with `end` set to what the caller returns).
bool retry(ssl_st* ssl, int fd, int r, TlsSession::Deadline deadline, ssize_t& end) {
  switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ:
      if (wait_for(fd, POLLIN, deadline)) return true;
      end = kTimedOut;
      return false;
    case SSL_ERROR_WANT_WRITE:
      if (wait_for(fd, POLLOUT, deadline)) return true;
      end = kTimedOut;
      return false;
    case SSL_ERROR_ZERO_RETURN:
      end = 0;  // the client's close_notify
      return false;
    default:
      ERR_clear_error();
      end = -1;
      return false;
  }
}

}  // namespace

bool TlsSession::accept(Deadline deadline) {
  for (;;) {
    ERR_clear_error();
    const int r = SSL_accept(ssl_);
    if (r == 1) return true;
    ssize_t end = 0;
    if (!retry(ssl_, fd_, r, deadline, end)) return false;
  }
}

ssize_t TlsSession::read(char* p, std::size_t n, Deadline deadline) {
  for (;;) {
    ERR_clear_error();
    const int r = SSL_read(ssl_, p, static_cast<int>(std::min<std::size_t>(n, INT_MAX)));
    if (r > 0) return r;
    ssize_t end = 0;
    if (!retry(ssl_, fd_, r, deadline, end)) return end;
  }
}

ssize_t TlsSession::write(const char* p, std::size_t n, Deadline deadline) {
  for (;;) {
    ERR_clear_error();
    const int r = SSL_write(ssl_, p, static_cast<int>(std::min<std::size_t>(n, INT_MAX)));
    if (r > 0) return r;
    ssize_t end = 0;
    if (!retry(ssl_, fd_, r, deadline, end)) return end == 0 ? -1 : end;
  }
}

bool TlsSession::pending() const { return SSL_pending(ssl_) > 0; }

bool TlsSession::peer_closed() {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;  // nothing arrived: still there
  ERR_clear_error();
  char c;
  const int r = SSL_peek(ssl_, &c, 1);
  if (r > 0) return false;
  const int e = SSL_get_error(ssl_, r);
  ERR_clear_error();
  return e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE;
}

void TlsSession::shutdown() {
  ERR_clear_error();
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

}  // namespace mstar::serve
