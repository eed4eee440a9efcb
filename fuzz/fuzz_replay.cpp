// Replay traces (mstar-replay): parsed as mstar-replay parses them, then run
// through the bounded or the ring resource on the reference backend.
#include "common.h"
#include "resources/bounded_kv/json.h"
#include "resources/ring_kv/json.h"
#include "core/errors.h"
#include "core/json_text.h"
#include "engine/replay.h"

using namespace mstar;

namespace {

// The storage a trace's config asks for, or 0 when the config is refused
// (replay_trace refuses it too, by the same reader).
std::size_t storage_bytes(const nlohmann::json& t) {
  if (!t.is_object() || !t.contains("config")) return 0;
  try {
    if (t.value("resource", std::string("bounded_kv")) == "ring_kv") {
      const RingKVConfig c = ring_kv_config_from_json(t["config"], "c");
      std::size_t b = 0;
      for (int64_t l = 0; l < c.num_layers; ++l) b += c.layer_bytes(l);
      return b;
    }
    return bounded_kv_config_from_json(t["config"], "c").pool_bytes();
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json trace;
  try {
    trace = parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "trace");
  } catch (const InputError&) {
    return 0;
  }
  // mstar refuses a size beyond the machine's memory (tested elsewhere);
  // the harness also skips sizes beyond its own memory limit, which
  // libFuzzer would report as a crash.
  if (storage_bytes(trace) > (std::size_t{64} << 20)) return 0;
  try {
    (void)dump_json(replay_trace(trace, ReplayOptions{Backend::reference, 1}));
  } catch (const InputError&) {
  } catch (const ConfigError&) {
  }
  return 0;
}
