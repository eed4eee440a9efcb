#include "config/yaml_field_source.h"

#include <vector>

namespace mstar {

bool YamlFieldSource::has(std::string_view key) {
  asked_.emplace(key);
  return m_.find(std::string(key)) != nullptr;
}

template <class T>
bool YamlFieldSource::read_value(std::string_view key, T& out, Range range) {
  asked_.emplace(key);
  const YAML::Node* v = m_.find(std::string(key));
  if (!v) return false;
  return read_yaml(*v, ctx_, path(key), out, range);
}

bool YamlFieldSource::read(std::string_view key, int64_t& out, Range range) { return read_value(key, out, range); }
bool YamlFieldSource::read(std::string_view key, double& out, Range range) { return read_value(key, out, range); }
bool YamlFieldSource::read(std::string_view key, bool& out, Range range) { return read_value(key, out, range); }
bool YamlFieldSource::read(std::string_view key, std::string& out, Range range) { return read_value(key, out, range); }

void YamlFieldSource::error(std::string_view key, const std::string& message) {
  const YAML::Node* v = m_.find(std::string(key));
  ctx_.error(v ? *v : m_.node, message);
}

bool YamlFieldSource::finish() {
  bool ok = true;
  const std::vector<std::string> known(asked_.begin(), asked_.end());
  for (const auto& [key, value] : m_.items) {
    if (asked_.count(key)) continue;
    const std::string near = did_you_mean(key, known);
    ctx_.error(*m_.key_node(key),
               near.empty() ? fmt::format("{}: unknown key '{}'", where_, key)
                            : fmt::format("{}: unknown key '{}'; did you mean '{}'?", where_, key, near));
    ok = false;
  }
  return ok;
}

}  // namespace mstar
