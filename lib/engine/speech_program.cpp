#include "engine/speech_program.h"

#include <map>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/json_text.h"
#include "kernels/parallel.h"
#include "engine/requests.h"
#include "engine/snapshot.h"
#include "engine/workload.h"
#include "models/guidance.h"
#include "models/sampling.h"

namespace mstar {

namespace {

using nlohmann::json;

// The source lengths and step spans every resource of the model takes: a
// voice must fit all of them.
struct SourceRange {
  int64_t min = 1, max = INT64_MAX;
  int64_t query_window = INT64_MAX;  // the longest prompt one step may write
  int64_t rows = 1;                  // rows per request (2: classifier-free guidance)
};

SourceRange source_range(const std::vector<SpecRef>& specs) {
  SourceRange r;
  for (const SpecRef& s : specs) {
    const SourceLimits l = s->source_limits();
    r.min = std::max(r.min, l.min_len);
    r.max = std::min(r.max, l.max_len);
    r.query_window = std::min(r.query_window, l.query_window);
    r.rows = std::max(r.rows, s->rows_per_request());
  }
  return r;
}

struct SpeechLive final : Live {
  std::optional<TokenStreamDecoder> text;  // with a tokenizer: each chunk's text, characters never split
  std::string voice;
  std::vector<int32_t> prompt;
  int64_t max_tokens = 0;
  Sampler sampler;
  int source = 0;
  int64_t source_len = 0;
  int64_t written = 0;         // committed entries past the source
  int32_t last = -1;           // the token the next step feeds (drawn by forward, streamed by emit)
  std::vector<int32_t> chunk;  // tokens not yet streamed
  int64_t chunks = 0, generated = 0;
  std::vector<float> guided;   // [vocab] this step's guided logits (two rows per request only)
  explicit SpeechLive(const SamplingParams& p) : sampler(p) {}
};

class SpeechProgram final : public Program {
 public:
  SpeechProgram(TokenModel& model, const ResolvedDeployment& d)
      : model_(model), range_(source_range(d.model.resource_specs())), tokenizer_(d.model.tokenizer) {
    const json& w = d.deployment.workload;
    const json settings = w.value("settings", json::object());
    chunk_tokens_ = settings.value("chunk_tokens", int64_t{8});
    guidance_ = settings.value("guidance_scale", 1.0);
    threads_ = static_cast<int>(d.deployment.threads);
    if (w.contains("voices"))
      for (const auto& [name, tokens] : w["voices"].items()) voices_[name].tokens = tokens.get<std::vector<int32_t>>();
  }

  std::string_view unit() const override { return "tokens"; }
  int64_t rows_per_request() const override { return range_.rows; }

  void prepare(ResourceSet& kv) override {
    int next = 1;
    for (auto& [name, v] : voices_) {
      // The workload reader checked every voice against the resources.
      v.source = next++;
      kv.register_source(v.source, static_cast<int64_t>(v.tokens.size()));
      model_.prefill_source(kv, v.source, v.tokens, range_.rows);
    }
  }

  std::unique_ptr<Live> start(const json& request) override {
    const std::string id = request_id(request);
    const JsonFields f(request, fmt::format("request '{}'", id));
    f.only({"id", "voice", "prompt", "text", "max_tokens", "sampling"});
    const std::string voice = f.string("voice");
    auto v = voices_.find(voice);
    if (v == voices_.end()) {
      std::vector<std::string> names;
      for (const auto& [name, known] : voices_) names.push_back(name);
      throw InputError(fmt::format("{}: unknown voice '{}' (voices: {})", f.who(), voice,
                                   names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
    }
    if (f.has("prompt") == f.has("text"))
      throw InputError(fmt::format("{}: give exactly one of 'prompt' (token ids) or 'text'", f.who()));
    json prompt;
    if (f.has("text")) {
      if (!tokenizer_)
        throw InputError(fmt::format("{}: 'text' needs a model with a tokenizer; this one takes a 'prompt' of token ids",
                                     f.who()));
      if (!f.at("text").is_string()) throw InputError(fmt::format("{}: 'text' must be a string", f.who()));
      try {
        // The prompt continues the voice's stream: no BOS of its own.
        prompt = tokenizer_->encode(f.at("text").get<std::string>(), false);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: text: {}", f.who(), e.what()));
      }
    } else {
      prompt = f.at("prompt");
      if (!prompt.is_array()) throw InputError(fmt::format("{}: needs a 'prompt' list of tokens", f.who()));
    }
    if (prompt.empty()) throw InputError(fmt::format("{}: the prompt is empty; it needs at least one token", f.who()));
    if (static_cast<int64_t>(prompt.size()) > range_.query_window)
      throw InputError(fmt::format("{}: the prompt has {} tokens; one step writes at most {} (query_window)", f.who(),
                                   prompt.size(), range_.query_window));
    SamplingParams sp;
    if (f.has("sampling")) {
      const JsonFields s(f.at("sampling"), f.who() + " sampling");
      s.only({"temperature", "top_k", "top_p", "seed"});
      // Ranges are SamplingParams::validate's, below, which names them.
      sp.temperature = s.real("temperature", -1e300, 1e300, 0.0);
      sp.top_p = s.real("top_p", -1e300, 1e300, 1.0);
      sp.top_k = s.integer("top_k", 0, model_.vocab_size(), 0);
      sp.seed = static_cast<uint64_t>(s.integer("seed", 0, INT64_MAX, 0));
    }
    sp.validate(f.who() + " sampling");
    auto live = std::make_unique<SpeechLive>(sp);
    live->id = id;
    live->voice = voice;
    for (const auto& t : prompt) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= model_.vocab_size())
        throw InputError(fmt::format("{}: prompt token {} is not an id in [0, {})", f.who(), json_excerpt(t), model_.vocab_size()));
      live->prompt.push_back(t.get<int32_t>());
    }
    live->max_tokens = f.integer("max_tokens", 1, 1 << 24);
    live->source = v->second.source;
    live->source_len = static_cast<int64_t>(v->second.tokens.size());
    if (tokenizer_) live->text.emplace(*tokenizer_);
    return live;
  }

  void describe(const Live& l, Step& step, StepContext& ctx) const override {
    const auto& s = static_cast<const SpeechLive&>(l);
    const int64_t span = s.written == 0 ? static_cast<int64_t>(s.prompt.size()) : 1;
    step.segments.push_back({s.id, s.written == 0 ? "prompt" : "decode", span});
    step.streams[s.id] = {s.source_len, s.written, s.source};
    ctx.add_rows(s.id, static_cast<int>(range_.rows));
  }

  void forward(ResourceSet& kv, const Step& step, const StepContext& ctx, std::span<Live* const> batch) override {
    const int64_t R = range_.rows;
    rows_.clear();
    for (Live* l : batch) {
      const auto& s = static_cast<const SpeechLive&>(*l);
      for (int64_t r = 0; r < R; ++r) {
        if (s.written > 0) rows_.push_back({s.last});
        else if (r == 0) rows_.push_back(s.prompt);
        else rows_.emplace_back(s.prompt.size(), 0);  // the unconditional row: pad tokens
      }
    }
    const std::span<const float> all = model_.step(kv, step, ctx, rows_);
    const int64_t V = model_.vocab_size();
    // Every stream's next token, drawn here for the whole batch and spread
    // over the pool: each stream has its own sampler and generator, so the
    // draws are the same on any thread. One after another they were a serial
    // part of every step (about 80 µs and a 600 KB copy per stream at a
    // 151,936-entry vocabulary), which the cores idled through.
    kernels::parallel_for(threads_, static_cast<int64_t>(batch.size()), [&](int64_t i, int) {
      auto& s = static_cast<SpeechLive&>(*batch[static_cast<size_t>(i)]);
      const float* cond = all.data() + i * R * V;
      std::span<const float> logits(cond, static_cast<size_t>(V));
      if (R == 2) logits = guide(logits, {cond + V, static_cast<size_t>(V)}, guidance_, s.guided);
      s.last = s.sampler.sample(logits);
      s.written += static_cast<int64_t>(rows_[static_cast<size_t>(i * R)].size());
    });
  }

  Emitted emit(Live& l, const Emit& emit) override {
    auto& s = static_cast<SpeechLive&>(l);
    s.chunk.push_back(s.last);
    ++s.generated;
    const std::vector<int32_t> ends = model_.end_tokens();
    const bool end = std::find(ends.begin(), ends.end(), s.last) != ends.end();
    const bool full = s.generated >= s.max_tokens;
    if (static_cast<int64_t>(s.chunk.size()) >= chunk_tokens_ || end || full) {
      json chunk{{"event", "chunk"}, {"id", s.id}, {"index", s.chunks++}, {"tokens", s.chunk}};
      if (s.text) chunk["text"] = s.text->push(s.chunk) + (end || full ? s.text->finish() : std::string());
      emit({std::move(chunk), {}});
      s.chunk.clear();
    }
    return {1, end ? "end_token" : full ? "max_tokens" : ""};
  }

  json progress(const Live& l) const override { return {{"tokens", static_cast<const SpeechLive&>(l).generated}}; }

  json save(const Live& l) const override {
    const auto& s = static_cast<const SpeechLive&>(l);
    const SamplingParams& p = s.sampler.params();
    json j{{"voice", s.voice},
           {"voice_hash", voice_hash(voices_.at(s.voice))},
           {"settings", settings()},
           {"max_tokens", s.max_tokens},
           {"sampling", {{"temperature", p.temperature}, {"top_k", p.top_k}, {"top_p", p.top_p}, {"seed", p.seed}}},
           {"rng", s.sampler.state()},
           {"written", s.written},
           {"last", s.last},
           {"chunk", s.chunk},
           {"chunks", s.chunks},
           {"generated", s.generated}};
    // Before its first step the request still has its prompt to write.
    if (s.written == 0) j["prompt"] = s.prompt;
    if (s.text) {
      const TokenStreamDecoder::State t = s.text->state();
      j["text"] = {{"run", std::vector<uint8_t>(t.run.begin(), t.run.end())},
                   {"pending", std::vector<uint8_t>(t.pending.begin(), t.pending.end())}};
    }
    return j;
  }

  std::unique_ptr<Live> restore(const json& state, const std::string& id) override {
    const JsonFields f(state, fmt::format("resume '{}': the stream's state", id));
    f.only({"voice", "voice_hash", "settings", "max_tokens", "sampling", "rng", "written", "last", "chunk", "chunks",
            "generated", "prompt", "text"});
    const std::string voice = f.string("voice");
    auto v = voices_.find(voice);
    if (v == voices_.end())
      throw InputError(fmt::format("resume '{}': the stream speaks in voice '{}', which this deployment does not have",
                                   id, voice));
    if (f.string("voice_hash") != voice_hash(v->second))
      throw InputError(fmt::format("resume '{}': voice '{}' differs from the one the stream was made with "
                                   "(its prompt tokens changed)",
                                   id, voice));
    if (f.at("settings") != settings())
      throw InputError(fmt::format("resume '{}': the stream was made with workload settings {}; this deployment has {}",
                                   id, json_excerpt(f.at("settings")), json_excerpt(settings())));
    const JsonFields sf(f.at("sampling"), f.who() + ": sampling");
    sf.only({"temperature", "top_k", "top_p", "seed"});
    SamplingParams sp;
    sp.temperature = sf.real("temperature", 0, 100, 0.0);
    sp.top_p = sf.real("top_p", -1e300, 1e300, 1.0);
    sp.top_k = sf.integer("top_k", 0, model_.vocab_size(), 0);
    if (sf.has("seed") && sf.at("seed").is_number_unsigned()) sp.seed = sf.at("seed").get<uint64_t>();
    else sp.seed = static_cast<uint64_t>(sf.integer("seed", 0, INT64_MAX, 0));
    sp.validate(f.who() + ": sampling");
    auto live = std::make_unique<SpeechLive>(sp);
    live->id = id;
    live->voice = voice;
    try {
      live->sampler.set_state(f.string("rng"));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: rng: {}", f.who(), e.what()));
    }
    const int64_t V = model_.vocab_size();
    live->max_tokens = f.integer("max_tokens", 1, 1 << 24);
    live->written = f.integer("written", 0, INT64_MAX / 8);
    live->generated = f.integer("generated", live->written > 0 ? 1 : 0, live->written > 0 ? live->max_tokens - 1 : 0);
    live->chunks = f.integer("chunks", 0, live->generated);
    live->last = static_cast<int32_t>(live->written > 0 ? f.integer("last", 0, V - 1) : f.integer("last", -1, -1));
    const json& chunk = f.at("chunk");
    if (!chunk.is_array() || static_cast<int64_t>(chunk.size()) >= chunk_tokens_ ||
        static_cast<int64_t>(chunk.size()) > live->generated)
      throw InputError(fmt::format("{}: chunk: expected fewer than {} tokens not yet streamed", f.who(), chunk_tokens_));
    for (const json& t : chunk) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= V)
        throw InputError(fmt::format("{}: chunk: {} is not a token id in [0, {})", f.who(), json_excerpt(t), V));
      live->chunk.push_back(t.get<int32_t>());
    }
    if (live->written == 0) {
      const json& prompt = f.at("prompt");
      if (!prompt.is_array() || prompt.empty() || static_cast<int64_t>(prompt.size()) > range_.query_window)
        throw InputError(fmt::format("{}: prompt: expected 1 to {} token ids", f.who(), range_.query_window));
      for (const json& t : prompt) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= V)
          throw InputError(fmt::format("{}: prompt: {} is not a token id in [0, {})", f.who(), json_excerpt(t), V));
        live->prompt.push_back(t.get<int32_t>());
      }
    } else if (f.has("prompt")) {
      throw InputError(fmt::format("{}: prompt: a stream that has started keeps no prompt", f.who()));
    }
    if (f.has("text") != static_cast<bool>(tokenizer_))
      throw InputError(fmt::format("{}: text: {}", f.who(),
                                   tokenizer_ ? "missing, but this model decodes text" : "present, but this model has no tokenizer"));
    if (tokenizer_) {
      const JsonFields tf(f.at("text"), f.who() + ": text");
      tf.only({"run", "pending"});
      auto bytes = [&](const char* key) {
        const json& a = tf.at(key);
        std::string out;
        if (!a.is_array() || a.size() > 4096) throw InputError(fmt::format("{}: {}: expected at most 4096 bytes", tf.who(), key));
        for (const json& b : a) {
          if (!b.is_number_unsigned() || b.get<uint64_t>() > 255)
            throw InputError(fmt::format("{}: {}: {} is not a byte", tf.who(), key, json_excerpt(b)));
          out.push_back(static_cast<char>(b.get<uint64_t>()));
        }
        return out;
      };
      live->text.emplace(*tokenizer_);
      live->text->restore({bytes("run"), bytes("pending")});
    }
    live->source = v->second.source;
    live->source_len = static_cast<int64_t>(v->second.tokens.size());
    return live;
  }

 private:
  struct Voice {
    std::vector<int32_t> tokens;
    int source = 0;
  };
  // What a resumed stream must find unchanged: its voice's tokens (its
  // source is prefilled from them) and the settings that shape its output.
  static std::string voice_hash(const Voice& v) {
    return fmt::format("{:016x}", hash64(std::string_view(reinterpret_cast<const char*>(v.tokens.data()),
                                                          v.tokens.size() * sizeof(int32_t))));
  }
  json settings() const { return {{"chunk_tokens", chunk_tokens_}, {"guidance_scale", guidance_}}; }
  TokenModel& model_;
  SourceRange range_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  int64_t chunk_tokens_ = 8;
  double guidance_ = 1.0;
  int threads_ = 1;  // the deployment's: the pool the step's draws are spread over
  std::map<std::string, Voice> voices_;
  std::vector<std::vector<int32_t>> rows_;
};

std::optional<json> read_speech_workload(const YAML::Node& n, YamlContext& ctx, const ModelManifest& model,
                                         const std::filesystem::path& dir) {
  auto e = read_map(n, ctx, "workload", {"chunk_tokens", "guidance_scale", "voices", "requests"});
  if (!e) return std::nullopt;
  bool ok = e->items.size() == n.size();
  const SourceRange range = source_range(model.resource_specs());
  const int64_t vocab = model.arch->vocab_size();
  json out{{"voices", json::object()}, {"settings", json::object()}, {"requests", {{"count", 0}}}};
  int64_t chunk = 8;
  double guidance = 1.0;
  if (const YAML::Node* v = e->find("chunk_tokens")) ok = read_yaml(*v, ctx, "workload.chunk_tokens", chunk, Range{1, 1 << 16}) && ok;
  if (const YAML::Node* v = e->find("guidance_scale")) {
    // The scale multiplies logit differences in f32: a huge one makes them
    // infinite and the sampled token garbage.
    const bool read = read_yaml(*v, ctx, "workload.guidance_scale", guidance);
    if (read && (guidance < 0 || guidance > 100))
      ctx.error(*v, fmt::format("workload.guidance_scale must be in [0, 100], got {}", guidance));
    ok = read && guidance >= 0 && guidance <= 100 && ok;
  }
  out["settings"] = {{"chunk_tokens", chunk}, {"guidance_scale", guidance}};
  if (const YAML::Node* v = e->find("voices")) {
    ok = read_voices(*v, ctx, vocab, model.tokenizer.get(), dir, out["voices"]) && ok;
    for (const auto& [name, tokens] : out["voices"].items()) {
      const auto len = static_cast<int64_t>(tokens.size());
      if (len < range.min || len > range.max)
        ctx.error((*v)[name], fmt::format("workload.voices.{}: {} prompt tokens; the model's slots take sources of {} to "
                                          "{}",
                                          name, len, range.min, range.max));
      if (len < range.min || len > range.max) ok = false;
    }
  }
  const YAML::Node* r = e->find("requests");
  if (!r) return ok ? std::optional<json>(out) : std::nullopt;
  RequestsBlock b;
  int64_t prompt = 8, max_tokens = 64;
  json sampling = json::object();
  std::vector<std::string> voice_names;
  const bool block_ok = read_requests_block(
      *r, ctx, {"voices", "prompt_tokens", "max_tokens", "sampling"}, b,
      [&](const std::string& k, const YAML::Node& v) {
        const std::string path = "workload.requests." + k;
        if (k == "prompt_tokens") return read_yaml(v, ctx, path, prompt, Range{1, std::min<int64_t>(1 << 16, range.query_window)});
        if (k == "max_tokens") return read_yaml(v, ctx, path, max_tokens, Range{1, 1 << 24});
        if (k == "sampling") {
          auto se = read_map(v, ctx, path, {"temperature", "top_k", "top_p"});
          if (!se) return false;
          bool good = se->items.size() == v.size();
          for (const auto& [sk, sv] : se->items) {
            if (sk == "top_k") {
              int64_t top_k = 0;
              good = read_yaml(sv, ctx, path + ".top_k", top_k, Range{0, vocab}) && good;
              sampling["top_k"] = top_k;
            } else {
              double d = 0;
              const bool read = read_yaml(sv, ctx, path + "." + sk, d);
              const bool in_range = sk == "temperature" ? d >= 0 && d <= 100 : d > 0 && d <= 1;
              if (read && !in_range)
                ctx.error(sv, fmt::format("{}.{} must be in {}, got {}", path, sk,
                                          sk == "temperature" ? "[0, 100]" : "(0, 1]", d));
              good = read && in_range && good;
              sampling[sk] = d;
            }
          }
          return good;
        }
        // voices
        if (!v.IsSequence() || v.size() == 0) {
          ctx.error(v, fmt::format("{}: expected a list of voice names, got {}", path, describe(v)));
          return false;
        }
        bool good = true;
        for (size_t i = 0; i < v.size(); ++i) {
          std::string s;
          if (!read_yaml(v[i], ctx, fmt::format("{}[{}]", path, i), s)) good = false;
          else if (!out["voices"].contains(s)) {
            ctx.error(v[i], fmt::format("{}[{}]: '{}' is not a voice of this workload", path, i, s));
            good = false;
          } else {
            voice_names.push_back(s);
          }
        }
        return good;
      });
  ok = block_ok && ok;
  if (block_ok && b.count > 0 && voice_names.empty()) {
    ctx.error(*r, "workload.requests: missing required key 'voices'");
    ok = false;
  }
  if (!ok) return std::nullopt;
  out["requests"] = {{"count", b.count},   {"seed", b.seed},         {"arrival_every", b.arrival_every},
                     {"voices", voice_names}, {"prompt_tokens", prompt}, {"max_tokens", max_tokens},
                     {"sampling", sampling}, {"vocab", vocab}};
  return out;
}

// Request i of the generator read_speech_workload wrote: voices round robin,
// a seeded prompt, request i's sampling seed seed + i.
json speech_workload_request(const json& g, int64_t i) {
  const auto seed = g["seed"].get<int64_t>();
  const json& voices = g["voices"];
  json q;
  q["arrival"] = i * g["arrival_every"].get<int64_t>();
  q["id"] = fmt::format("req{:03}", i);
  q["voice"] = voices[static_cast<size_t>(i) % voices.size()];
  q["prompt"] = seeded_tokens(static_cast<uint64_t>(seed + i) * 7919u, g["prompt_tokens"].get<int64_t>(),
                              g["vocab"].get<int64_t>());
  q["max_tokens"] = g["max_tokens"];
  q["sampling"] = g["sampling"];
  q["sampling"]["seed"] = seed + i;
  return q;
}

}  // namespace

ProgramKind speech_program() {
  ProgramKind k;
  k.task = "speech";
  k.read_workload = read_speech_workload;
  k.workload_request = speech_workload_request;
  k.make = [](Model& m, const ResolvedDeployment& d) -> std::unique_ptr<Program> {
    auto* tm = dynamic_cast<TokenModel*>(&m);
    MSTAR_ASSERT(tm, "a family of task speech builds a token model");
    return std::make_unique<SpeechProgram>(*tm, d);
  };
  return k;
}

}  // namespace mstar
