#include "engine/snapshot.h"

#include <cstring>

#include <fmt/format.h>
#include <xxhash.h>

#include "core/errors.h"
#include "core/files.h"
#include "core/json_text.h"
#include "engine/requests.h"
#include "models/stored_tensors.h"

namespace mstar {

namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'M', 'S', 'T', 'A', 'R', 'S', 'N', 'P'};
constexpr std::size_t kPrefix = 24, kChecksum = 8;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_le(std::string_view b, std::size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

json layers_json(const std::vector<HostBuffer>& kv) {
  json out = json::array();
  for (const HostBuffer& b : kv) {
    json shape = json::array();
    for (int64_t i = 0; i < b.shape().rank(); ++i) shape.push_back(b.shape()[i]);
    out.push_back(json{{"dtype", std::string(to_string(b.dtype()))}, {"shape", shape}, {"bytes", b.bytes()}});
  }
  return out;
}

// A saved resource entry's own fields: what its type wrote beside the type,
// key and sections.
json state_fields(const json& entry) {
  json f = entry;
  for (const char* k : {"type", "key", "layers"}) f.erase(k);
  return f;
}

// Every part of a refusal names the file.
[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  throw InputError(fmt::format("snapshot {}: {}", name, why));
}

// The header's list of byte sections for one resource, checked against the
// shapes this engine's resource keeps; returns their total bytes.
uint64_t check_sections(const json& layers, const ResourceSpec& spec, const std::string& where) {
  const std::vector<Shape> want = spec.state_shapes();
  const DType dt = spec.dtype();
  if (!layers.is_array() || layers.size() != want.size())
    throw InputError(fmt::format("{}: expected {} layer sections", where, want.size()));
  uint64_t total = 0;
  for (size_t l = 0; l < want.size(); ++l) {
    const JsonFields f(layers[l], fmt::format("{}.layers[{}]", where, l));
    f.only({"dtype", "shape", "bytes"});
    const json& shape = f.at("shape");
    bool same = shape.is_array() && static_cast<int64_t>(shape.size()) == want[l].rank();
    for (size_t i = 0; same && i < shape.size(); ++i)
      same = shape[i].is_number_integer() && shape[i].get<int64_t>() == want[l][static_cast<int64_t>(i)];
    if (!same || f.string("dtype") != to_string(dt))
      throw InputError(fmt::format("{}.layers[{}]: {} {}, but this resource keeps {} {}", where, l, f.string("dtype"),
                                   json_excerpt(shape), to_string(dt), want[l]));
    const auto bytes = static_cast<uint64_t>(row_bytes(dt, want[l].numel()));
    if (f.integer("bytes", 0, INT64_MAX) != static_cast<int64_t>(bytes))
      throw InputError(fmt::format("{}.layers[{}]: {} bytes for a section of {}", where, l, f.integer("bytes", 0, INT64_MAX),
                                   bytes));
    total += bytes;
  }
  return total;
}

// Copies the next `shape` of `dtype` out of the payload, refusing a NaN or
// an infinity: a stream's cache holds finite numbers, and a writer that put
// others there would have the resumed stream read garbage (a fuzzed one
// made every logit NaN; docs/reliability.md).
HostBuffer take_section(std::string_view payload, std::size_t& at, DType dtype, const Shape& shape,
                        const std::string& name, const std::string& where) {
  HostBuffer b(dtype, shape);
  MSTAR_ASSERT(at + b.bytes() <= payload.size(), "the sections' sizes were checked against the payload");
  if (b.bytes()) std::memcpy(b.data(), payload.data() + at, b.bytes());
  at += b.bytes();
  if (const auto bad = first_non_finite(b.data(), dtype, static_cast<std::size_t>(shape.numel())))
    refuse(name, fmt::format("{} holds {} at element {} (a saved cache holds finite numbers)", where,
                             load_as_f32(b.data(), dtype, *bad), *bad));
  return b;
}

}  // namespace

uint64_t hash64(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

Fingerprints fingerprints(const ResolvedDeployment& d) {
  const ModelManifest& m = d.model;
  Fingerprints f;
  std::string model = dump_json(json{{"family", m.family->name}, {"architecture", m.arch->to_json()}});
  if (!m.tokenizer_path.empty()) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(m.tokenizer_path, ec)) {
      files.push_back(m.tokenizer_path / "tokenizer.json");
      if (std::filesystem::exists(m.tokenizer_path / "tokenizer_config.json", ec))
        files.push_back(m.tokenizer_path / "tokenizer_config.json");
    } else {
      files.push_back(m.tokenizer_path);
    }
    for (const auto& file : files) {
      const std::string bytes = read_regular_file(file, std::size_t{512} << 20, file.string());
      model += fmt::format("\n{}:{}", file.filename().string(), hex(hash64(bytes)));
    }
  }
  f.model = hash64(model);

  std::string weights;
  if (m.weights.dummy_seed && m.checkpoint.empty()) {
    weights = fmt::format("dummy seed {} dtype {}", *m.weights.dummy_seed, to_string(m.weights.dtype));
  } else {
    // Where every tensor is, in files of which sizes (safetensors or GGUF).
    std::error_code ec;
    for (const auto& file : m.weight_files())
      weights += fmt::format("file of {} bytes\n", std::filesystem::file_size(file, ec));
    for (const auto& [name, e] : index_weights(m.weight_files()))
      weights += fmt::format("{} {} [{}] {} {}\n", name, e.stored_dtype, fmt::join(e.shape, ","), e.offset, e.bytes);
  }
  f.weights = hash64(weights);

  json resources = json::array();
  for (const SpecRef& spec : m.resource_specs()) {
    json c = spec->config_json();
    c.erase(std::string(spec->pool_field()));  // a deployment's choice: a stream resumes under another
    resources.push_back(json{{"type", spec->type()}, {"key", spec->key()}, {"layers", spec->served_layers()},
                             {"config", c}});
  }
  f.resources = hash64(dump_json(resources));
  return f;
}

std::size_t max_snapshot_bytes(const std::vector<SpecRef>& specs) {
  std::size_t total = kPrefix + kMaxSnapshotHeaderBytes + kChecksum;
  for (const SpecRef& spec : specs)
    for (const Shape& s : spec->state_shapes()) total += row_bytes(spec->dtype(), s.numel());
  return total;
}

std::string encode_snapshot(const SnapshotContent& c, const Fingerprints& f, const std::vector<SpecRef>& specs) {
  MSTAR_ASSERT(c.resources.empty() || c.resources.size() == specs.size(), "one state per resource");
  json resources = json::array();
  std::vector<const HostBuffer*> sections;
  for (size_t i = 0; i < c.resources.size(); ++i) {
    const ResourceState& state = *c.resources[i];
    json r{{"type", specs[i]->type()}, {"key", specs[i]->key()}};
    r.update(state.fields());
    r["layers"] = layers_json(state.sections());
    for (const HostBuffer& h : state.sections()) sections.push_back(&h);
    resources.push_back(std::move(r));
  }
  const json header{{"task", c.task},
                    {"id", c.id},
                    {"fingerprints", {{"model", hex(f.model)}, {"weights", hex(f.weights)}, {"resources", hex(f.resources)}}},
                    {"program", c.program},
                    {"resources", resources}};
  const std::string text = dump_json(header);
  MSTAR_ASSERT(text.size() <= kMaxSnapshotHeaderBytes, "a stream's state is far smaller than the header limit");
  std::size_t total = kPrefix + text.size() + kChecksum;
  for (const HostBuffer* h : sections) total += h->bytes();
  std::string out;
  out.reserve(total);
  out.append(kMagic, sizeof kMagic);
  put_u32(out, kSnapshotVersion);
  put_u32(out, static_cast<uint32_t>(text.size()));
  put_u64(out, total);
  out += text;
  for (const HostBuffer* h : sections) out.append(static_cast<const char*>(h->data()), h->bytes());
  put_u64(out, hash64(out));
  return out;
}

SnapshotContent decode_snapshot(std::string_view bytes, const std::string& name, const Fingerprints& f,
                                const std::string& task, const std::vector<SpecRef>& specs) {
  if (bytes.size() < kPrefix + kChecksum)
    refuse(name, fmt::format("is {} bytes, too short to be an mstar snapshot", bytes.size()));
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    refuse(name, "is not an mstar snapshot (it does not start with MSTARSNP)");
  if (const auto v = get_le(bytes, 8, 4); v != kSnapshotVersion)
    refuse(name, fmt::format("is a snapshot of format version {}; this mstar reads version {}", v, kSnapshotVersion));
  const uint64_t total = get_le(bytes, 16, 8);
  if (total > bytes.size()) refuse(name, fmt::format("is truncated: it has {} of its {} bytes", bytes.size(), total));
  if (total < bytes.size())
    refuse(name, fmt::format("has {} bytes but says it has {}: bytes were added to it", bytes.size(), total));
  const uint64_t stored = get_le(bytes, bytes.size() - kChecksum, 8);
  if (const uint64_t sum = hash64(bytes.substr(0, bytes.size() - kChecksum)); sum != stored)
    refuse(name, fmt::format("is corrupted: its checksum is {} but its bytes hash to {}", hex(stored), hex(sum)));
  // A file whose checksum holds was written whole by some writer; what
  // follows still checks every field, since anyone can write a checksum.
  const uint64_t header_len = get_le(bytes, 12, 4);
  if (header_len > kMaxSnapshotHeaderBytes || kPrefix + header_len + kChecksum > bytes.size())
    refuse(name, fmt::format("its header length {} does not fit the file", header_len));
  const std::string_view payload = bytes.substr(kPrefix + header_len, bytes.size() - kChecksum - kPrefix - header_len);
  json header;
  try {
    header = parse_json(bytes.substr(kPrefix, header_len), "header", 32);
    const JsonFields h(header, "header");
    h.only({"task", "id", "fingerprints", "program", "resources"});
    const JsonFields fp(h.at("fingerprints"), "header.fingerprints");
    fp.only({"model", "weights", "resources"});
    for (const auto& [part, mine, what] :
         {std::tuple<const char*, uint64_t, const char*>{"model", f.model, "another model (family, architecture or tokenizer)"},
          {"weights", f.weights, "other weights"},
          {"resources", f.resources, "another resource geometry or dtype"}})
      if (fp.string(part) != hex(mine))
        refuse(name, fmt::format("was made with {}: its {} fingerprint is {}, this engine's is {}", what, part,
                                 fp.string(part), hex(mine)));
    if (h.string("task") != task)
      refuse(name, fmt::format("holds a {} stream; this engine serves {}", h.string("task"), task));
  } catch (const InputError& e) {
    if (std::string_view(e.what()).rfind("snapshot ", 0) == 0) throw;
    refuse(name, e.what());
  }
  SnapshotContent c;
  c.task = header["task"].get<std::string>();
  c.id = header["id"].is_string() ? header["id"].get<std::string>() : std::string();
  if (c.id.empty()) refuse(name, "header.id: expected the stream's request id");
  c.program = header["program"];
  const json& resources = header["resources"];
  if (!resources.is_array() || (!resources.empty() && resources.size() != specs.size()))
    refuse(name, fmt::format("header.resources: expected none or one state for each of the model's {} resources",
                             specs.size()));
  try {
    uint64_t sections = 0;
    for (size_t i = 0; i < resources.size(); ++i) {
      const std::string where = fmt::format("header.resources[{}]", i);
      const JsonFields r(resources[i], where);
      const ResourceSpec& spec = *specs[i];
      if (r.string("type") != spec.type() || r.string("key") != spec.key())
        throw InputError(fmt::format("{}: {} '{}', but this model's resource {} is {} '{}'", where, r.string("type"),
                                     r.string("key"), i, spec.type(), spec.key()));
      spec.check_state_fields(state_fields(resources[i]), where);
      sections += check_sections(r.at("layers"), spec, where);
    }
    if (sections != payload.size())
      throw InputError(fmt::format("the header's sections hold {} bytes but the file carries {}", sections,
                                   payload.size()));
  } catch (const InputError& e) {
    refuse(name, e.what());
  }
  std::size_t at = 0;
  const auto section = [](size_t resource, size_t layer) {
    return fmt::format("the section of header.resources[{}].layers[{}]", resource, layer);
  };
  for (size_t i = 0; i < resources.size(); ++i) {
    const ResourceSpec& spec = *specs[i];
    std::vector<HostBuffer> kv;
    for (const Shape& sh : spec.state_shapes())
      kv.push_back(take_section(payload, at, spec.dtype(), sh, name, section(i, kv.size())));
    c.resources.push_back(spec.make_state(state_fields(resources[i]), std::move(kv)));
  }
  return c;
}

}  // namespace mstar
