// mstar-bench tokenize TOKENIZER FILE: encode throughput of a
// tokenizer.json over a text file, one thread (tokenizer/throughput.h).
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include "../cli.h"
#include "core/files.h"
#include "subcommand.h"
#include "tokenizer/throughput.h"

namespace mstar::bench::command {

namespace {

struct TokenizeOptions {
  std::string tokenizer, file;
  int passes = 5;
};

int run_tokenize(const TokenizeOptions& o, const Context& c) {
  const std::string text = read_file(o.file, Tokenizer::kMaxToolInputBytes, o.file);
  const EncodeThroughput r = measure_encode(Tokenizer::from_file(o.tokenizer), text, o.passes, true);
  std::cout << render(Table{{"bytes", "tokens", "median_ms", "mb_per_s"},
                            {{static_cast<int64_t>(r.bytes), static_cast<int64_t>(r.tokens), r.median_s * 1e3,
                              r.mb_per_s()}}},
                      c.format);
  return mstar::cli::kOk;
}

}  // namespace

void add_tokenize(CLI::App& app, Subcommands& out) {
  auto [tokenize, o] = add_subcommand(app, out, "tokenize",
                                      "encode throughput of a tokenizer.json over a text file, one thread", run_tokenize);
  tokenize->add_option("tokenizer", o->tokenizer, "tokenizer.json, or a folder holding it")->required();
  tokenize->add_option("file", o->file, "text to encode")->required();
  tokenize->add_option("--passes", o->passes, "timed passes")->check(CLI::Range(1, 1000));
}

}  // namespace mstar::bench::command
