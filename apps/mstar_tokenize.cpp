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
#include "core/files.h"
#include "core/json_text.h"
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
      throw mstar::InputError(fmt::format("{}: element {} is not a token id: {}", where, i, mstar::json_excerpt(v)));
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

// Input is text a person or a program wrote: bounded in depth like every
// JSON mstar reads (core/json_text.h), and in size below.
nlohmann::json parse_input(const std::string& s, const std::string& where) { return mstar::parse_json(s, where); }

constexpr std::size_t kMaxInputBytes = mstar::Tokenizer::kMaxToolInputBytes;

// The ids as one JSON array, written in pieces: a JSON value per id (16
// bytes each, and the whole text again) would hold about 5 times the ids'
// own memory at once.
void write_ids(mstar::OutputFile& out, const std::vector<int32_t>& ids) {
  std::string piece = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    fmt::format_to(std::back_inserter(piece), "{}{}", i ? "," : "", ids[i]);
    if (piece.size() >= (1 << 16)) {
      out.write(piece);
      piece.clear();
    }
  }
  out.write(piece + "]\n");
}

int bench(const mstar::Tokenizer& tok, const std::string& file, int passes, bool special) {
  const std::string text = mstar::read_file(file, kMaxInputBytes, file);
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
    // Every write is checked: output lost to a full disk or a closed pipe is an error.
    mstar::OutputFile out = mstar::OutputFile::standard_output();
    if (jsonl) {
      std::string line;
      mstar::LineReader lines(std::cin, "stdin", kMaxInputBytes, kMaxInputBytes);
      for (mstar::LineRead got; (got = lines.next(line)) != mstar::LineRead::end;) {
        const std::string where = fmt::format("stdin line {}", lines.line_number());
        if (got == mstar::LineRead::too_long)
          throw mstar::InputError(fmt::format("{}: longer than the limit of {}", where, mstar::bytes_text(lines.max_line())));
        const nlohmann::json j = parse_input(line, where);
        if (decode) {
          const auto ids = ids_from_json(j, where);
          out.write(mstar::dump_json(nlohmann::json(tok.decode(ids, no_special))) + '\n');
        } else {
          if (!j.is_string()) throw mstar::InputError(fmt::format("{}: expected a JSON string", where));
          out.write(mstar::dump_json(nlohmann::json(tok.encode(j.get<std::string>(), !no_special))) + '\n');
        }
      }
      out.close();
      return mstar::cli::kOk;
    }
    const std::string input = mstar::read_stream(std::cin, kMaxInputBytes, "stdin");
    if (decode) {
      out.write(tok.decode(ids_from_json(parse_input(input, "stdin"), "stdin"), no_special));
    } else {
      write_ids(out, tok.encode(input, !no_special));
    }
    out.close();
    return mstar::cli::kOk;
  });
}
