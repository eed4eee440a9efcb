// Hugging Face config.json and generation_config.json, read by the llama and
// qwen2 families (the first byte chooses the family and which file the rest
// of the input replaces; the other file is the committed checkpoint's).
#include "common.h"
#include "core/files.h"
#include "core/json_text.h"
#include "models/family.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const fs::path dir = fuzz::scratch() / "checkpoint";
  // The committed files, read once: copied with fs::copy_file for every
  // input, the copy's sendfile was now and then interrupted by libFuzzer's
  // timer signal (EINTR), which ended a run as a crash of the harness.
  static const fs::path ckpt = fuzz::source_dir() / "models" / "hf-demo-qwen2";
  static const std::string config = read_file(ckpt / "config.json", kMiB, "config.json");
  static const std::string generation_config =
      read_file(ckpt / "generation_config.json", kMiB, "generation_config.json");
  fs::create_directories(dir);
  const bool generation = data[0] & 1;
  if (generation) fuzz::write(dir / "config.json", config);
  else fuzz::write(dir / "generation_config.json", generation_config);
  fuzz::write(dir / (generation ? "generation_config.json" : "config.json"), data + 1, size - 1);
  const ModelFamily* family = find_family(data[0] & 2 ? "llama" : "qwen2");
  ArchitectureInput in;
  in.checkpoint = dir;
  in.positions = data[0] & 4 ? "cache" : "stream";
  in.error = [](const std::string& msg) { (void)msg.size(); };
  if (std::unique_ptr<Architecture> a = family->read_architecture(in)) {
    (void)a->tensors();
    (void)dump_json(a->to_json());
  }
  return 0;
}
