// mstar-tokenize MODEL_DIR|tokenizer.json [--decode] [--no-special] [--jsonl] [--bench FILE [--passes N]]
// Encodes the text on standard input and prints its ids as a JSON array;
// with --decode reads a JSON array of ids and prints their text. --no-special
// encodes without the post-processor's special tokens and decodes skipping
// special tokens. --jsonl treats each input line as one JSON string (or
// array, with --decode) and answers with one JSON line each. --bench FILE
// prints the encode throughput over FILE (median of the passes).
// Exit 0 when done, 1 for invalid input or configuration (the message names
// the thing and the value), 2 for a usage error.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "core/errors.h"
#include "tokenizer/throughput.h"
#include "tokenizer/tokenizer.h"

namespace {

std::vector<int32_t> ids_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) throw mstar::InputError(fmt::format("{}: expected a JSON array of token ids", where));
  std::vector<int32_t> ids;
  ids.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& v = j[i];
    if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
      throw mstar::InputError(fmt::format("{}: element {} is not a token id: {}", where, i, v.dump()));
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

nlohmann::json parse_input(const std::string& s, const std::string& where) {
  try {
    return nlohmann::json::parse(s);
  } catch (const nlohmann::json::parse_error& e) {
    throw mstar::InputError(fmt::format("{}: not valid JSON: {}", where, e.what()));
  }
}

int bench(const mstar::Tokenizer& tok, const std::string& file, int passes, bool special) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw mstar::InputError(fmt::format("{}: cannot be read", file));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const mstar::EncodeThroughput r = mstar::measure_encode(tok, text, passes, special);
  fmt::print("{}: {} bytes, {} tokens, encode {:.2f} MB/s (median of {} passes, {:.1f} ms each)\n", file, r.bytes,
             r.tokens, r.mb_per_s(), passes, r.median_s * 1e3);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Encode text to token ids (or decode ids to text) with a Hugging Face tokenizer.json"};
  std::string model, bench_file;
  bool decode = false, no_special = false, jsonl = false;
  int passes = 5;
  app.add_option("model", model, "tokenizer.json, or a directory holding it (and tokenizer_config.json)")->required();
  app.add_flag("--decode", decode, "read a JSON array of ids, print their text");
  app.add_flag("--no-special", no_special, "encode without added special tokens; decode skipping special tokens");
  app.add_flag("--jsonl", jsonl, "one JSON string (or id array with --decode) per input line, one JSON line out");
  app.add_option("--bench", bench_file, "print the encode throughput over FILE");
  app.add_option("--passes", passes, "timed passes for --bench")->check(CLI::Range(1, 1000));
  if (auto rc = mstar::cli::parse(app, argc, argv)) return *rc;
  if (!bench_file.empty() && (decode || jsonl)) {
    fmt::print(stderr, "mstar-tokenize: --bench cannot be combined with --decode or --jsonl\n");
    return mstar::cli::kUsage;
  }
  return mstar::cli::guarded("mstar-tokenize", [&] {
    const mstar::Tokenizer tok = mstar::Tokenizer::from_file(model);
    if (!bench_file.empty()) return bench(tok, bench_file, passes, !no_special);
    std::ios::sync_with_stdio(false);
    if (jsonl) {
      std::string line;
      for (size_t n = 1; std::getline(std::cin, line); ++n) {
        const std::string where = fmt::format("stdin line {}", n);
        const nlohmann::json j = parse_input(line, where);
        if (decode) {
          const auto ids = ids_from_json(j, where);
          std::cout << nlohmann::json(tok.decode(ids, no_special)).dump() << '\n';
        } else {
          if (!j.is_string()) throw mstar::InputError(fmt::format("{}: expected a JSON string", where));
          std::cout << nlohmann::json(tok.encode(j.get<std::string>(), !no_special)).dump() << '\n';
        }
      }
      return mstar::cli::kOk;
    }
    std::stringstream ss;
    ss << std::cin.rdbuf();
    if (decode) {
      std::cout << tok.decode(ids_from_json(parse_input(ss.str(), "stdin"), "stdin"), no_special);
    } else {
      std::cout << nlohmann::json(tok.encode(ss.str(), !no_special)).dump() << '\n';
    }
    return mstar::cli::kOk;
  });
}
