#include "models/safetensors.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/files.h"
#include "core/json_text.h"

namespace mstar {

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorData>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", std::string(safetensors_name(t.dtype))}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-aligned
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(fmt::format("{}: cannot be written", path.string()));
  const uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : tensors)
    if (t.bytes) out.write(static_cast<const char*>(t.data), static_cast<std::streamsize>(t.bytes));
  if (!out) throw InputError(fmt::format("{}: write failed", path.string()));
}

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(fmt::format("{}: no such weights file (or not a regular file)", name));
  SafetensorsHeader h;
  h.file_size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  unsigned char len_bytes[8];
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8))
    throw InputError(fmt::format("{}: too short to be a safetensors file", name));
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
  constexpr uint64_t kMaxHeader = 100u << 20;
  if (len == 0 || len > kMaxHeader || 8 + len > h.file_size)
    throw InputError(fmt::format("{}: header length {} does not fit the file ({} bytes)", name, len, h.file_size));
  std::string text(len, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(len)))
    throw InputError(fmt::format("{}: cannot read the {}-byte header", name, len));
  h.data_offset = 8 + len;
  // nlohmann keeps the last of two equal keys; count them while parsing so a
  // duplicate name is refused instead of silently dropping a tensor.
  std::map<std::string, int> names;
  const nlohmann::json::parser_callback_t count = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& k) {
    // A header nests three deep; anything deeper is hostile (the parsed tree
    // would be torn down recursively).
    if (depth > 4) throw InputError(fmt::format("{}: the header nests deeper than a safetensors header", name));
    if (depth == 1 && ev == nlohmann::json::parse_event_t::key && ++names[k.get<std::string>()] == 2)
      throw InputError(fmt::format("{}: tensor '{}' appears twice in the header", name, k.get<std::string>()));
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, count);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: the header is not JSON ({})", name, e.what()));
  }
  if (!j.is_object()) throw InputError(fmt::format("{}: the header is not a JSON object", name));
  const uint64_t data_size = h.file_size - h.data_offset;
  for (const auto& [key, v] : j.items()) {
    if (key == "__metadata__") continue;
    const std::string where = fmt::format("{}: tensor '{}'", name, key);
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets") ||
        !v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2)
      throw InputError(where + ": expected {dtype, shape, data_offsets: [begin, end]}");
    SafetensorsEntry e;
    e.dtype = v["dtype"].get<std::string>();
    for (const auto& d : v["shape"]) {
      // No tensor has a dimension near 2^40; a larger one only serves to overflow sizes.
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40))
        throw InputError(fmt::format("{}: shape entries must be integers in [0, 2^40], got {}", where, json_excerpt(d)));
      e.shape.push_back(d.get<int64_t>());
    }
    if (!v["data_offsets"][0].is_number_unsigned() || !v["data_offsets"][1].is_number_unsigned())
      throw InputError(where + ": data_offsets must be non-negative integers");
    e.begin = v["data_offsets"][0].get<uint64_t>();
    e.end = v["data_offsets"][1].get<uint64_t>();
    if (e.begin > e.end || e.end > data_size)
      throw InputError(fmt::format("{}: data [{}, {}) lies outside the {}-byte data section", where, e.begin, e.end,
                                   data_size));
    h.tensors.emplace(key, std::move(e));
  }
  // The tensors tile the data section, as the safetensors library requires:
  // each starts where the one before it ends, and the last ends the file.
  // Two tensors over the same bytes would alias (a writer's bug, never a
  // model); a gap or bytes after the last would be data nothing names.
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> spans;
  for (const auto& [key, e] : h.tensors) spans.push_back({{e.begin, e.end}, key});
  std::sort(spans.begin(), spans.end());
  uint64_t expected = 0;
  std::string before;
  for (const auto& [range, key] : spans) {
    if (range.first < expected)
      throw InputError(fmt::format("{}: tensors '{}' and '{}' overlap in the data section", name, before, key));
    if (range.first > expected)
      throw InputError(fmt::format("{}: bytes [{}, {}) of the data section belong to no tensor (before '{}'); a "
                                   "safetensors file's tensors cover its data exactly",
                                   name, expected, range.first, key));
    expected = range.second;
    before = key;
  }
  if (expected != data_size)
    throw InputError(fmt::format("{}: {} bytes after the last tensor's data belong to no tensor; a safetensors file's "
                                 "tensors cover its data exactly",
                                 name, data_size - expected));
  return h;
}

std::vector<std::filesystem::path> weight_files(const std::filesystem::path& path) {
  const std::string name = path.string();
  if (name.size() < 11 || name.compare(name.size() - 11, 11, ".index.json") != 0) return {path};
  constexpr std::size_t kMaxIndex = 64u << 20;
  const nlohmann::json j = parse_json(read_regular_file(path, kMaxIndex, name), name);
  if (!j.is_object()) throw InputError(fmt::format("{}: not a JSON object", name));
  std::error_code ec;
  auto map = j.find("weight_map");
  if (map == j.end() || !map->is_object() || map->empty())
    throw InputError(fmt::format("{}: weight_map: expected an object of tensor name -> shard file", name));
  std::vector<std::filesystem::path> files;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string() || file.get<std::string>().empty())
      throw InputError(fmt::format("{}: weight_map.{}: expected a shard file name, got {}", name, tensor, json_excerpt(file)));
    // A shard is a file beside the index, named plainly: no folder, no "..",
    // no absolute path, so an index cannot make mstar open any other file.
    const std::string& given = file.get_ref<const std::string&>();
    if (given.find('/') != std::string::npos || given.find('\\') != std::string::npos || given == "." ||
        given == ".." || given.find('\0') != std::string::npos)
      throw InputError(fmt::format("{}: weight_map.{}: shard {} is not a file name in the checkpoint's folder", name,
                                   tensor, json_excerpt(file)));
    const std::filesystem::path shard = path.parent_path() / given;
    if (std::find(files.begin(), files.end(), shard) == files.end()) files.push_back(shard);
  }
  for (const auto& f : files) {
    if (std::filesystem::is_regular_file(f, ec)) continue;
    if (std::filesystem::exists(f, ec))
      throw InputError(fmt::format("{}: names shard '{}', which is not a regular file (a directory, device, socket or "
                                   "pipe?)",
                                   name, f.filename().string()));
    throw InputError(fmt::format("{}: names shard '{}', which is missing", name, f.filename().string()));
  }
  return files;
}

}  // namespace mstar
