#include <doctest/doctest.h>

#include "resources/bounded_kv/json.h"
#include "core/format_value.h"
#include "core/errors.h"
#include "resources/bounded_kv/config.h"

using namespace mstar;

namespace {

BoundedKVConfig small() {
  BoundedKVConfig c;
  c.num_layers = 2;
  c.num_heads = 2;
  c.head_dim = 8;
  c.rows_per_request = 1;
  c.max_source_len = 20;
  c.retention = SinkWindow{4, 16};
  return c;
}

std::string error_of(const BoundedKVConfig& c) {
  try {
    c.validate("tts.kv");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("constant retention: sink inside the source costs the slot nothing") {
  BoundedKVConfig c = small();
  c.min_source_len = 0;
  CHECK(c.sink_capacity() == 4);  // a request with no source writes its whole sink
  CHECK(c.window_capacity() == 16);
  CHECK(c.retained_tokens() == 20);
  CHECK(c.scratch_tokens() == 20);  // no query_window: a step may keep as much as the slot retains
  CHECK(c.slot_tokens() == 40);
  CHECK(c.max_retained() == 20);
  c.query_window = 3;
  CHECK(c.scratch_tokens() == 3);  // one step writes at most 3
  CHECK(c.slot_tokens() == 23);
  c.query_window.reset();
  c.min_source_len = 5;  // every source is longer than the sink
  CHECK(c.sink_capacity() == 0);
  CHECK(c.retained_tokens() == 16);
  CHECK(c.slot_tokens() == 32);
  CHECK(c.retention_for(7) == SinkWindow{4, 16, false});
}

TEST_CASE("a rule of the source length: the whole source plus 4") {
  BoundedKVConfig c = small();
  c.min_source_len = 3;
  c.max_source_len = 50;
  c.retention = RetentionRule{SourceAffine{1, 4}, SourceAffine{0, 32}, true};
  c.validate();
  CHECK(c.retention_for(10) == SinkWindow{14, 32, true});
  CHECK(c.sink_capacity() == 4);
  CHECK(c.window_capacity() == 32);
  CHECK(c.max_retained() == 50 + 4 + 32);
  CHECK(fmt::format("{}", c.retention) == "{sink: source+4, window: 32, window_includes_step: true}");
}

TEST_CASE("validation names the field and the value") {
  BoundedKVConfig c = small();
  c.num_heads = -2;
  CHECK(error_of(c) == "tts.kv: num_heads must be at least 1, got -2");
  c = small();
  c.max_slots = 0;
  CHECK(error_of(c) == "tts.kv: max_slots must be in [1, 2147483647], got 0");
  c = small();
  c.min_source_len = -1;
  CHECK(error_of(c) == "tts.kv: min_source_len must be at least 0, got -1");
  c = small();
  c.min_source_len = 30;
  CHECK(error_of(c) == "tts.kv: max_source_len 20 is below min_source_len 30");
  c = small();
  c.retention = SinkWindow{-1, 8};
  CHECK(error_of(c) == "tts.kv: retention {sink: -1, window: 8} gives a negative sink (-1) at source length 0");
  c = small();
  c.query_window = 0;
  CHECK(error_of(c) == "tts.kv: query_window must be at least 1, got 0");
}

TEST_CASE("a rule whose retention shrinks as the source grows is refused") {
  BoundedKVConfig c = small();
  c.max_source_len = 40;
  c.retention = RetentionRule{SourceAffine{0, 4}, SourceAffine{-1, 64}, false};
  CHECK(error_of(c) ==
        "tts.kv: retention {sink: 4, window: -1*source+64} shrinks as the source grows: window 64 at source length 0 "
        "but 24 at 40");
}

TEST_CASE("a rule that needs more than a slot can hold is refused") {
  BoundedKVConfig c = small();
  c.max_source_len = 1'000'000;
  c.retention = RetentionRule{SourceAffine{0, 4}, SourceAffine{4096, 0}, false};
  CHECK(error_of(c) ==
        "tts.kv: retention {sink: 4, window: 4096*source} needs 4096000004 entries per slot (sink 4 + window "
        "4096000000) at source lengths up to 1000000, more than a slot can address (1073741823)");
}

TEST_CASE("JSON: fields declared once serve parsing and printing") {
  BoundedKVConfig c = small();
  c.query_window = 8;
  c.dtype = DType::bf16;
  const auto j = to_json(c);
  CHECK(bounded_kv_config_from_json(j, "cfg") == c);
  CHECK(format_fields(c) ==
        "num_layers: 2, num_heads: 2, head_dim: 8, rows_per_request: 1, max_source_len: 20, retention: {sink: 4, "
        "window: 16}, max_slots: 32, min_source_len: 0, dtype: bf16, reverse_step_order: false, query_window: 8");

  auto broken = j;
  broken.erase("head_dim");
  CHECK_THROWS_WITH_AS(bounded_kv_config_from_json(broken, "cfg"), "cfg.head_dim: missing required key", ConfigError);
  broken = j;
  broken["max_slot"] = 3;
  CHECK_THROWS_WITH_AS(bounded_kv_config_from_json(broken, "cfg"), "cfg.max_slot: unknown key", ConfigError);
  broken = j;
  broken["num_layers"] = "two";
  CHECK_THROWS_WITH_AS(bounded_kv_config_from_json(broken, "cfg"), "cfg.num_layers: expected an integer, got \"two\"",
                       ConfigError);
  broken = j;
  broken["retention"] = {{"sink", {{"per_source", 1}, {"plus", 4}}}};
  CHECK_THROWS_WITH_AS(bounded_kv_config_from_json(broken, "cfg"), "cfg.retention.window: missing required key",
                       ConfigError);
}
