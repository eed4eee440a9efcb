#pragma once
// Files that users name, read and written so that nothing is unbounded and
// nothing fails silently:
//  - every read has a size limit: a file larger than it (or /dev/zero, or a
//    pipe that never ends) is refused with the limit named, never read until
//    memory runs out; a directory is refused, never read as empty;
//  - every write is checked, and a failed one (a full disk, a closed pipe)
//    is an error naming the file and the reason, never lost output;
//  - a file that must never be seen half-written is written atomically.
// Failures throw InputError naming the file (as `name` gives it) and why.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>

namespace mstar {

constexpr std::size_t kKiB = std::size_t{1} << 10, kMiB = std::size_t{1} << 20, kGiB = std::size_t{1} << 30;

// "4194304 bytes (4 MiB)": a limit as a message states it.
std::string bytes_text(std::uint64_t bytes);

// The whole file, at most max_bytes of it. `name` is how the file is shown
// in messages ("--requests x.jsonl", "voices.bob.file 'b.txt'"). Regular
// files, pipes and character devices are read (up to the limit); a missing
// file, a directory and anything else are refused.
std::string read_file(const std::filesystem::path& path, std::size_t max_bytes, const std::string& name);
// The same for a file that is part of a model or a saved stream
// (tokenizer.json, config.json, a shard index, a voice, a snapshot): only a
// regular file, so a device or pipe named in its place (/dev/zero) is
// refused at once, not read up to the limit.
std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes, const std::string& name);

// A file opened to be read piece by piece (with LineReader, say), after the
// same checks as read_file: a missing file, a directory or anything but a
// regular file, pipe or character device is refused.
std::ifstream open_input(const std::filesystem::path& path, const std::string& name);

// All of a stream (standard input, say), at most max_bytes of it.
std::string read_stream(std::istream& in, std::size_t max_bytes, const std::string& name);

// What LineReader::next found.
enum class LineRead : unsigned char {
  line,      // a line, without its newline
  too_long,  // a line longer than max_line: skipped to its newline, never held
  end,       // the end of the stream
};

// Lines of a stream, each at most max_line bytes held and all of them at
// most max_total read, so a stream without newlines (/dev/zero) or without
// end is refused at the limit instead of filling memory, and one over-long
// line is the caller's to report while the lines after it are read.
class LineReader {
 public:
  LineReader(std::istream& in, std::string name, std::size_t max_line, std::size_t max_total);
  // Throws InputError naming the line when the total passes max_total.
  [[nodiscard]] LineRead next(std::string& line);
  std::size_t max_line() const { return max_line_; }
  int64_t line_number() const { return line_; }

 private:
  std::istream& in_;
  std::string name_;
  std::size_t max_line_, max_total_, total_ = 0;
  int64_t line_ = 0;
};

// An output file (or standard output) whose every write is checked. Writes
// are buffered; flush() hands them to the kernel; close() can also sync a
// regular file to disk, since some file systems report a full disk only
// then, so the failure is known before the program says it is done.
class OutputFile {
 public:
  static OutputFile standard_output();
  // Creates or truncates `path`.
  explicit OutputFile(const std::filesystem::path& path);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();  // closes without reporting: call close() to learn of a failure

  void write(std::string_view bytes);
  void flush();
  void close(bool sync = true);
  const std::string& name() const { return name_; }

 private:
  OutputFile(int fd, std::string name, bool owned);
  [[noreturn]] void fail(const char* doing, int err) const;
  int fd_ = -1;
  std::string name_;
  bool owned_ = false;
  std::string buffer_;
};

// Writes `bytes` to `path` so that the path holds either its old content or
// all of the new, never a part: a temporary file in the same directory,
// written, synced, renamed over the path, and the directory synced.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

}  // namespace mstar
