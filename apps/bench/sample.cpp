// mstar-bench sample: turning one step's logits into a token, timed per
// sampling setting (bench/sampling.h).
#include <cstdint>
#include <iostream>
#include <memory>

#include "../cli.h"
#include "bench/sampling.h"
#include "subcommand.h"

namespace mstar::bench::command {

namespace {

struct SampleOptions {
  int64_t vocab = 151936;
  int repeats = 200;
};

int run_sample(const SampleOptions& o, const Context& c) {
  Table t{{"setting", "vocab", "median_us", "max_us"}, {}};
  for (const SamplingResult& r : bench_sampling(o.vocab, o.repeats))
    t.rows.push_back({r.setting, r.vocab, r.median_us, r.max_us});
  std::cout << render(t, c.format);
  return mstar::cli::kOk;
}

}  // namespace

void add_sample(CLI::App& app, Subcommands& out) {
  auto [samp, o] =
      add_subcommand(app, out, "sample", "turning one step's logits into a token, per sampling setting", run_sample);
  samp->add_option("--vocab", o->vocab, "vocabulary size")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  samp->add_option("--repeats", o->repeats, "timed draws")->check(CLI::Range(1, 1000000));
}

}  // namespace mstar::bench::command
