#pragma once
// JSON that a person (or an attacker) wrote, in and out. Every JSON text
// mstar reads from users (request lines, replay traces, snapshot headers,
// config.json, shard indexes, tokenizer.json) is parsed here:
//  - nesting is bounded before anything is built: nlohmann's parser is
//    iterative, but dumping, copying and comparing a value recurse, so a
//    100k-deep array would overflow the stack long after it was accepted;
//  - a parse error is an InputError naming the source and the place, never a
//    library text on its own.
// Every JSON mstar prints goes through dump_json, which replaces bytes that
// are not UTF-8 (a file path, say) instead of throwing.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mstar {

// Deeper than any JSON mstar reads (a replay trace's rows nest about 9
// levels) and shallow enough that recursion over it is harmless.
constexpr int kMaxJsonDepth = 64;

// The offset of the first bracket that opens level max_depth + 1, or nullopt
// when the text never nests that deep. Brackets inside strings do not count.
std::optional<std::size_t> json_too_deep(std::string_view text, int max_depth = kMaxJsonDepth);

// Parses `text`; throws InputError "<where>: ..." naming the line and column
// of a syntax error or of the bracket that nests too deep.
nlohmann::json parse_json(std::string_view text, const std::string& where, int max_depth = kMaxJsonDepth);
// The same for callers that refuse one input and go on: nullopt, and `why`
// says what is wrong (without `where`).
std::optional<nlohmann::json> try_parse_json(std::string_view text, std::string& why, int max_depth = kMaxJsonDepth);

// Serialises for output; never throws (invalid UTF-8 becomes U+FFFD).
std::string dump_json(const nlohmann::json& j, int indent = -1);
// A value as JSON for a message, cut to about `max` bytes.
std::string json_excerpt(const nlohmann::json& j, std::size_t max = 60);

}  // namespace mstar
