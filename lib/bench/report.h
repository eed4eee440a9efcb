#pragma once
// Benchmark tables: one set of rows, printed as a markdown table (like
// llama-bench), CSV or JSON.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mstar::bench {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;  // numbers stay numbers for JSON and CSV

  std::string markdown() const;
  std::string csv() const;
  nlohmann::json json() const;  // an array of objects keyed by column
};

enum class Format : unsigned char { markdown, csv, json };
std::string render(const Table& t, Format f);

}  // namespace mstar::bench
