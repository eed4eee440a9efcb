#include "core/progress.h"

#include <memory>
#include <string>

#include <fmt/format.h>

namespace mstar {

namespace {

int64_t percent(int64_t done, int64_t total) { return total > 0 ? done * 100 / total : 100; }

}  // namespace

std::string progress_text(std::string_view what, int64_t done, int64_t total) {
  return fmt::format("{}: {}%", what, percent(done, total));
}

Progress line_progress(std::FILE* out) {
  // The last line drawn: a report that would draw it again draws nothing.
  auto last = std::make_shared<std::string>();
  return [out, last](std::string_view what, int64_t done, int64_t total) {
    std::string line = progress_text(what, done, total);
    if (line == *last) return;
    fmt::print(out, "\r{}{}", line, done >= total ? "\n" : "");
    std::fflush(out);
    *last = done >= total ? std::string() : std::move(line);
  };
}

}  // namespace mstar
