#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"

namespace mstar {

namespace fs = std::filesystem;

std::string bytes_text(std::uint64_t b) {
  constexpr std::uint64_t kTiB = std::uint64_t{1} << 40;
  if (b >= kTiB && b % kTiB == 0) return fmt::format("{} bytes ({} TiB)", b, b / kTiB);
  if (b >= kGiB && b % kGiB == 0) return fmt::format("{} bytes ({} GiB)", b, b / kGiB);
  if (b >= kMiB && b % kMiB == 0) return fmt::format("{} bytes ({} MiB)", b, b / kMiB);
  if (b >= kTiB) return fmt::format("{} bytes ({:.2f} TiB)", b, static_cast<double>(b) / kTiB);
  if (b >= kGiB) return fmt::format("{} bytes ({:.2f} GiB)", b, static_cast<double>(b) / kGiB);
  if (b >= kMiB) return fmt::format("{} bytes ({:.2f} MiB)", b, static_cast<double>(b) / kMiB);
  return fmt::format("{} bytes", b);
}

namespace {

std::string reason(int err) { return std::strerror(err); }

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

void write_all(int fd, const char* p, std::size_t n, const std::string& name) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: writing failed: {}", name, reason(errno)));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

namespace {

// What every reader refuses before reading: a file that is not there, a
// directory (read as empty otherwise), or something that is not data.
void check_readable(const fs::path& path, const std::string& name) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(fmt::format("{}: cannot be read: {}", name, reason(errno)));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory, not a file", name));
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
    throw InputError(fmt::format("{}: is not a regular file, a pipe or a character device", name));
}

}  // namespace

std::ifstream open_input(const fs::path& path, const std::string& name) {
  check_readable(path, name);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read: {}", name, reason(errno)));
  return in;
}

namespace {

// Which kinds of file a read takes besides a regular one.
enum class Takes : unsigned char { regular_only, streams_too };

std::string read_whole(const fs::path& path, std::size_t max_bytes, const std::string& name, Takes takes) {
  // O_NONBLOCK keeps open() from waiting on a FIFO with no writer; reads
  // below switch back to blocking.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw InputError(fmt::format("{}: cannot be read: {}", name, reason(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw InputError(fmt::format("{}: cannot be read: {}", name, reason(errno)));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory, not a file", name));
  if (!S_ISREG(st.st_mode) && takes == Takes::regular_only)
    throw InputError(fmt::format("{}: is not a regular file (a device, socket or pipe?)", name));
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
    throw InputError(fmt::format("{}: is not a regular file, a pipe or a character device", name));
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw InputError(fmt::format("{}: is {} bytes, over the limit of {}", name, st.st_size, bytes_text(max_bytes)));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  std::string out;
  // One byte past the limit tells a file that is too long from one that
  // fits exactly; the size a file reports is not trusted (/proc, devices).
  char buf[1 << 16];
  while (out.size() <= max_bytes) {
    const ssize_t n = ::read(fd.get(), buf, std::min(sizeof buf, max_bytes + 1 - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: cannot be read: {}", name, reason(errno)));
    }
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
  throw InputError(fmt::format("{}: is larger than the limit of {}", name, bytes_text(max_bytes)));
}

}  // namespace

std::string read_file(const fs::path& path, std::size_t max_bytes, const std::string& name) {
  return read_whole(path, max_bytes, name, Takes::streams_too);
}

std::string read_regular_file(const fs::path& path, std::size_t max_bytes, const std::string& name) {
  return read_whole(path, max_bytes, name, Takes::regular_only);
}

std::string read_stream(std::istream& in, std::size_t max_bytes, const std::string& name) {
  std::string out;
  char buf[1 << 16];
  while (out.size() <= max_bytes) {
    in.read(buf, static_cast<std::streamsize>(std::min(sizeof buf, max_bytes + 1 - out.size())));
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (in.bad()) throw InputError(fmt::format("{}: reading failed", name));
    if (!in) return out;
  }
  throw InputError(fmt::format("{}: is larger than the limit of {}", name, bytes_text(max_bytes)));
}

LineReader::LineReader(std::istream& in, std::string name, std::size_t max_line, std::size_t max_total)
    : in_(in), name_(std::move(name)), max_line_(max_line), max_total_(max_total) {}

LineRead LineReader::next(std::string& line) {
  using Traits = std::char_traits<char>;
  line.clear();
  std::streambuf* sb = in_.rdbuf();
  if (!sb || Traits::eq_int_type(sb->sgetc(), Traits::eof())) return LineRead::end;
  ++line_;
  bool too_long = false;
  for (;;) {
    const Traits::int_type c = sb->sbumpc();
    const LineRead ended = too_long ? LineRead::too_long : LineRead::line;
    if (Traits::eq_int_type(c, Traits::eof())) return ended;
    if (++total_ > max_total_)
      throw InputError(fmt::format("{}: more than {} in all (at line {})", name_, bytes_text(max_total_), line_));
    if (c == '\n') return ended;
    if (too_long) continue;
    line.push_back(Traits::to_char_type(c));
    if (line.size() > max_line_) {
      too_long = true;
      line.clear();
      line.shrink_to_fit();  // what it held goes now, not at the next line
    }
  }
}

OutputFile::OutputFile(int fd, std::string name, bool owned) : fd_(fd), name_(std::move(name)), owned_(owned) {}

OutputFile OutputFile::standard_output() { return OutputFile(STDOUT_FILENO, "standard output", false); }

OutputFile::OutputFile(const fs::path& path) : name_(path.string()), owned_(true) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot be written: {}", name_, reason(errno)));
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), name_(std::move(o.name_)), owned_(o.owned_), buffer_(std::move(o.buffer_)) {}

OutputFile::~OutputFile() {
  if (owned_ && fd_ >= 0) ::close(fd_);
}

void OutputFile::fail(const char* doing, int err) const {
  throw InputError(fmt::format("{}: {} failed: {}", name_, doing, reason(err)));
}

void OutputFile::write(std::string_view bytes) {
  if (fd_ < 0) throw InputError(fmt::format("{}: write after close", name_));
  buffer_.append(bytes);
  if (buffer_.size() >= (std::size_t{1} << 16)) flush();
}

void OutputFile::flush() {
  if (buffer_.empty() || fd_ < 0) return;
  std::string pending = std::move(buffer_);
  buffer_.clear();
  write_all(fd_, pending.data(), pending.size(), name_);
}

void OutputFile::close(bool sync) {
  if (fd_ < 0) return;
  flush();
  struct stat st {};
  if (sync && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd_) != 0) fail("syncing", errno);
  if (owned_) {
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("closing", errno);
  } else {
    fd_ = -1;
  }
}

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  static std::atomic<uint64_t> counter{0};
  const std::string name = path.string();
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const fs::path tmp = dir / fmt::format(".{}.tmp.{}.{}", path.filename().string(), ::getpid(), counter++);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw InputError(fmt::format("{}: cannot be written: {}", name, reason(errno)));
  try {
    write_all(fd.get(), bytes.data(), bytes.size(), name);
    if (::fsync(fd.get()) != 0) throw InputError(fmt::format("{}: syncing failed: {}", name, reason(errno)));
    if (::close(fd.release()) != 0) throw InputError(fmt::format("{}: closing failed: {}", name, reason(errno)));
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw InputError(fmt::format("{}: cannot be renamed into place: {}", name, reason(errno)));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // The rename is durable once the directory is synced.
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.get() >= 0 && ::fsync(d.get()) != 0)
    throw InputError(fmt::format("{}: syncing its directory failed: {}", name, reason(errno)));
}

}  // namespace mstar
