#include "bench/report.h"

#include <algorithm>

#include <fmt/format.h>

namespace mstar::bench {

namespace {

std::string cell(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::abs(d) >= 100 ? fmt::format("{:.1f}", d) : std::abs(d) >= 1 ? fmt::format("{:.2f}", d) : fmt::format("{:.3f}", d);
  }
  return v.dump();
}

}  // namespace

std::string Table::markdown() const {
  std::vector<size_t> w(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) w[c] = columns[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], cell(r[c]).size());
  std::string o = "|";
  for (size_t c = 0; c < columns.size(); ++c) o += fmt::format(" {:<{}} |", columns[c], w[c]);
  o += "\n|";
  for (size_t c = 0; c < columns.size(); ++c) o += " " + std::string(w[c], '-') + " |";
  o += "\n";
  for (const auto& r : rows) {
    o += "|";
    for (size_t c = 0; c < r.size(); ++c)
      o += r[c].is_string() ? fmt::format(" {:<{}} |", cell(r[c]), w[c]) : fmt::format(" {:>{}} |", cell(r[c]), w[c]);
    o += "\n";
  }
  return o;
}

std::string Table::csv() const {
  std::string o;
  for (size_t c = 0; c < columns.size(); ++c) o += (c ? "," : "") + columns[c];
  o += "\n";
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) o += (c ? "," : "") + (r[c].is_string() ? r[c].get<std::string>() : r[c].dump());
    o += "\n";
  }
  return o;
}

nlohmann::json Table::json() const {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json o = nlohmann::json::object();
    for (size_t c = 0; c < r.size(); ++c) o[columns[c]] = r[c];
    a.push_back(o);
  }
  return a;
}

std::string render(const Table& t, Format f) {
  switch (f) {
    case Format::markdown: return t.markdown();
    case Format::csv: return t.csv();
    case Format::json: return t.json().dump(2) + "\n";
  }
  return "";
}

}  // namespace mstar::bench
