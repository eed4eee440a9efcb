#include "serve/api_key.h"

#include <cctype>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/files.h"

namespace mstar::serve {

namespace {
constexpr std::size_t kMaxKey = 4096;
}  // namespace

void check_api_key(std::string_view key, std::string_view where) {
  if (key.empty()) throw InputError(fmt::format("{}: the API key is empty", where));
  if (key.size() > kMaxKey)
    throw InputError(fmt::format("{}: the API key is {} characters, more than {}", where, key.size(), kMaxKey));
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c <= 0x20 || c >= 0x7f)
      throw InputError(fmt::format("{}: the API key holds byte 0x{:02x} at {}: only printable ASCII without spaces",
                                   where, c, i));
  }
}

std::string read_api_key_file(const std::filesystem::path& path) {
  const std::string name = "--api-key-file " + path.string();
  std::string key = read_regular_file(path, kMaxKey + 2, name);
  if (key.size() >= 1 && key.back() == '\n') key.pop_back();
  if (key.size() >= 1 && key.back() == '\r') key.pop_back();
  check_api_key(key, name);
  return key;
}

bool bearer_matches(std::string_view authorization, std::string_view key) {
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() < scheme.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return false;
  const std::string_view given = authorization.substr(scheme.size());
  // Every byte of the key is looked at whatever the guess holds.
  unsigned diff = given.size() == key.size() ? 0u : 1u;
  for (std::size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned char>(key[i]) ^ static_cast<unsigned char>(i < given.size() ? given[i] : 0);
  return diff == 0;
}

}  // namespace mstar::serve
