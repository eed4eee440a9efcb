// mstar-bench checkpoint FOLDER: a Hugging Face checkpoint as a speech
// model (bench/engine_bench.h): load, memory, the concurrency sweep, its
// products alone, decode at depths, prefill and the roofline's pairs.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "../cli.h"
#include "bench/engine_bench.h"
#include "subcommand.h"

namespace mstar::bench::command {

namespace {

struct CheckpointArgs {
  std::string folder, backend = "cpu", depths, kv_dtype = "bf16", activations = "f32";
  std::string streams = "1,4,16";
  CheckpointOptions options;
};

int run_checkpoint(const CheckpointArgs& a, const Context& c) {
  CheckpointOptions copt = a.options;
  copt.backend = parse_backend(a.backend, "--backend");
  copt.kv_dtype = parse_dtype(a.kv_dtype, "--kv-dtype");
  copt.activations = parse_dtype(a.activations, "--activations");
  copt.streams = a.streams.empty() ? std::vector<int64_t>{} : parse_list(a.streams, "--streams");
  if (!a.depths.empty()) copt.depths = parse_list(a.depths, "--depths", 0);  // 0: a fresh stream
  const CheckpointBench b = bench_checkpoint(a.folder, copt);
  for (const Table* t : {&b.load, &b.sweep, &b.products, &b.depths, &b.prefill, &b.roofline}) {
    if (t->rows.empty()) continue;
    if (t != &b.load && c.format == Format::markdown) std::cout << "\n";
    std::cout << render(*t, c.format);
  }
  return mstar::cli::kOk;
}

}  // namespace

void add_checkpoint(CLI::App& app, Subcommands& out) {
  auto [ckpt, a] = add_subcommand(app, out, "checkpoint",
                                  "a Hugging Face checkpoint folder as a speech model: load, memory, "
                                  "aggregate decode, its products alone, decode at depths, prefill",
                                  run_checkpoint);
  CheckpointOptions& copt = a->options;
  ckpt->add_option("folder", a->folder, "checkpoint folder (config.json, safetensors)")->required();
  ckpt->add_option("--kind", copt.kind, "family: llama or qwen2")->check(CLI::IsMember({"llama", "qwen2"}));
  ckpt->add_option("--backend", a->backend, "reference, cpu or cuda")->check(CLI::IsMember({"reference", "cpu", "cuda"}));
  ckpt->add_option("--threads", copt.threads, "threads")->check(CLI::Range(1, 1024));
  ckpt->add_option("--streams", a->streams, "concurrent streams to sweep, comma-separated (empty: no sweep)");
  ckpt->add_option("--tokens", copt.tokens, "tokens each stream decodes")->check(CLI::Range(1, 1 << 20));
  ckpt->add_option("--rounds", copt.rounds, "rounds of the sweep, every count in each round in turn")
      ->check(CLI::Range(1, 1000));
  ckpt->add_option("--window", copt.window, "the bounded cache's window")->check(CLI::Range(1, 1 << 20));
  ckpt->add_option("--depths", a->depths, "single-stream decode at these stream lengths, comma-separated");
  ckpt->add_option("--probe", copt.probe, "decode steps timed at each depth")->check(CLI::Range(1, 100000));
  ckpt->add_option("--prefill", copt.prefill, "time one prompt of this many tokens")->check(CLI::Range(0, 1 << 20));
  ckpt->add_option("--products", copt.products,
                   "time a decode step's matrix products alone, cold, at this many rows (streams), and their sum "
                   "over the sweep's step when --streams has that count; 0: not")
      ->check(CLI::Range(0, 4096));
  ckpt->add_option("--roofline", copt.roofline,
                   "one-stream decode steps at the deployment's threads and at one, each pair beside a read of memory "
                   "the moment before: this many pairs; 0: not")
      ->check(CLI::Range(0, 100000));
  ckpt->add_option("--neighbours", copt.neighbours, "busy-looping processes running beside the --streams sweep and the --roofline pairs")
      ->check(CLI::Range(0, 1024));
  ckpt->add_option("--kv-dtype", a->kv_dtype, "the cache's dtype")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  ckpt->add_option("--activations", a->activations, "what the matrix products round activations to (the deployment's key)")
      ->check(CLI::IsMember({"f32", "bf16", "q8_0"}));
}

}  // namespace mstar::bench::command
