#include "engine/requests.h"

#include <fmt/format.h>

#include "core/json_text.h"
#include "core/errors.h"

namespace mstar {

using nlohmann::json;

std::string request_id(const json& r) {
  if (!r.is_object())
    throw InputError(fmt::format("a request must be a JSON object, got {}", json_excerpt(r)));
  auto it = r.find("id");
  if (it == r.end() || !it->is_string() || it->get<std::string>().empty())
    throw InputError("a request needs a non-empty string 'id'");
  return it->get<std::string>();
}

}  // namespace mstar
