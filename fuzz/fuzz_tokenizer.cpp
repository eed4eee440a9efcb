// tokenizer.json: parsed as mstar parses it (size and depth bounded),
// loaded (every field checked), then used: encode, decode and streaming
// decode of a fixed text.
#include "common.h"
#include "core/errors.h"
#include "core/json_text.h"
#include "tokenizer/tokenizer.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    j = parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "tokenizer.json");
  } catch (const InputError&) {
    return 0;
  }
  try {
    const Tokenizer t = Tokenizer::from_json(j, "tokenizer.json");
    const std::vector<int32_t> ids = t.encode("Hello, wörld! <|im_start|> 123 \xe2\x80\x94 ok\n\n  x", true);
    (void)t.decode(ids);
    TokenStreamDecoder stream(t);
    for (int32_t id : ids) (void)stream.push(id);
    (void)stream.finish();
  } catch (const ConfigError&) {
  } catch (const InputError&) {
  }
  return 0;
}
