#pragma once
// A live stream on disk: one file per stream, written atomically, read back
// only when every byte checks out. docs/reliability.md documents the format:
//
//   offset 0   "MSTARSNP"                     magic, 8 bytes
//          8   u32 little-endian              format version (kSnapshotVersion)
//         12   u32 little-endian              header length H (JSON, UTF-8)
//         16   u64 little-endian              the file's total length
//         24   H bytes                        header: task, id, fingerprints, the program's state, each
//                                             resource's position and the shapes of its sections
//     24 + H   the sections                   each layer's entries, in the header's order, cache dtype
//    end - 8   u64 little-endian              XXH3-64 of every byte before it
//
// The checksum is always the last 8 bytes and the version always at offset
// 8, whatever the version: a reader of any version can tell a file of
// another from a corrupted one.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/deployment.h"
#include "resources/resource_set.h"

namespace mstar {

constexpr uint32_t kSnapshotVersion = 1;
constexpr std::size_t kMaxSnapshotHeaderBytes = std::size_t{16} << 20;

// XXH3-64 of bytes (the checksum, and the fingerprints' hash).
uint64_t hash64(std::string_view bytes);

// What a stream's continuation depends on, hashed. Two engines with equal
// fingerprints continue a stream identically (on the same backend and
// thread count: the cpu backend's sums follow its threads).
struct Fingerprints {
  // The family and its architecture as JSON, and the tokenizer's files
  // (tokenizer.json, tokenizer_config.json) byte for byte when it has one.
  uint64_t model = 0;
  // Dummy weights: the seed and dtype. Weights files: each file's size and
  // its safetensors header (names, dtypes, shapes, offsets), not the data:
  // hashing gigabytes per engine start is too slow, and loading already
  // checks every value is finite.
  uint64_t weights = 0;
  // Each resource's type, key, served layers and config (geometry and
  // dtype), leaving out the pool size a deployment tunes (max_slots,
  // num_sessions): a stream moves between deployments of other sizes.
  uint64_t resources = 0;
};
// Reads the weights files' headers and the tokenizer files (InputError when
// they cannot be read).
Fingerprints fingerprints(const ResolvedDeployment& d);

// One stream, in memory.
struct SnapshotContent {
  std::string task;                     // the program's task ("speech", "frames")
  std::string id;                       // the request id it ran under
  nlohmann::json program;               // the program's state (Program::save)
  std::vector<RequestState> resources;  // one per resource, or none when it committed nothing
};

// The file's bytes.
std::string encode_snapshot(const SnapshotContent& c, const Fingerprints& f, const std::vector<SpecRef>& specs);
// Checks, in order, the length, the magic, the version, the total length,
// the checksum, the header, the fingerprints, the task and every section's
// shape against `specs`; throws InputError "<name>: <reason>" at the first
// that fails, so nothing of a bad file is used.
SnapshotContent decode_snapshot(std::string_view bytes, const std::string& name, const Fingerprints& f,
                                const std::string& task, const std::vector<SpecRef>& specs);

// The largest snapshot a stream of these resources can make (its sections
// plus the header's limit): what a reader reads at most.
std::size_t max_snapshot_bytes(const std::vector<SpecRef>& specs);

}  // namespace mstar
