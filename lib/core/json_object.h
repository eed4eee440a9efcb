#pragma once
// Reading one JSON object a user wrote (a request line, a snapshot header, a
// resource's saved state): typed getters that name the object, the key and
// the value when it is wrong.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mstar {

// Getters over one JSON object, each throwing InputError
// "<who>: '<key>' ..." naming the key and the value.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& j, std::string who);
  // Every key must be one of `known`.
  void only(std::initializer_list<std::string_view> known) const;
  bool has(const char* key) const { return j_.contains(key); }
  int64_t integer(const char* key, int64_t lo, int64_t hi) const;  // required
  int64_t integer(const char* key, int64_t lo, int64_t hi, int64_t dflt) const;
  double real(const char* key, double lo, double hi, double dflt) const;  // finite, in [lo, hi]
  std::string string(const char* key) const;                               // required, non-empty
  const nlohmann::json& at(const char* key) const;                         // required
  const std::string& who() const { return who_; }

 private:
  const nlohmann::json& j_;
  std::string who_;
};

}  // namespace mstar
