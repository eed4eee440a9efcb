#include "subcommand.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/files.h"

namespace mstar::bench::command {

std::vector<int64_t> parse_list(const std::string& s, const char* option, int64_t minimum) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const std::string item = s.substr(start, comma - start);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < minimum || v > (int64_t{1} << 30))
      throw ConfigError(
          fmt::format("{} '{}': '{}' is not a count in [{}, {}]", option, s, item, minimum, int64_t{1} << 30));
    out.push_back(v);
    start = comma + 1;
  }
  return out;
}

void add_deployment(CLI::App& cmd, DeploymentArgs& d, const std::string& help) {
  cmd.add_option("config", d.config, help)->required();
  cmd.add_option("--set", d.sets, "dotted.key=value overrides");
}

void write_file(const std::string& path, const std::string& text) {
  OutputFile out{std::filesystem::path(path)};
  out.write(text);
  out.close();
}

}  // namespace mstar::bench::command
