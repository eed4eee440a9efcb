// Snapshot files: decoded against the fuzz engines' fingerprints and, when
// accepted, resumed and run, with the run's invariants checked. The first
// byte's bit 0 chooses the engine (speech, frames); bit 1 reseals the
// checksum (and the total length) after the fuzzer's changes, so inputs
// reach the header and section checks behind it, as a writer that lies
// would.
#include "engine/snapshot.h"
#include "engines.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool frames = data[0] & 1;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 2) && bytes.size() >= 32) {
    for (int i = 0; i < 8; ++i) bytes[16 + static_cast<size_t>(i)] = static_cast<char>((bytes.size() >> (8 * i)) & 0xff);
    const uint64_t h = hash64(std::string_view(bytes).substr(0, bytes.size() - 8));
    for (int i = 0; i < 8; ++i) bytes[bytes.size() - 8 + static_cast<size_t>(i)] = static_cast<char>((h >> (8 * i)) & 0xff);
  }
  Engine& engine = fuzz::engine(frames);
  const ResolvedDeployment& d = engine.deployment();
  static const Fingerprints prints[2] = {fingerprints(fuzz::engine(false).deployment()),
                                         fingerprints(fuzz::engine(true).deployment())};
  try {
    decode_snapshot(bytes, "fuzz", prints[frames ? 1 : 0], d.model.family->task, d.model.resource_specs());
  } catch (const InputError&) {
    return 0;
  }
  // Accepted: resume it through a file, as mstar-run does, and run it.
  const fs::path file = fuzz::scratch() / "input.snap";
  fuzz::write(file, bytes);
  RequestLine resume;
  resume.kind = RequestLine::Kind::resume;
  resume.id = "resumed";
  resume.path = file.string();
  std::vector<RequestLine> lines;
  lines.push_back(std::move(resume));
  fuzz::drive(engine, std::move(lines), 12, false);
  return 0;
}
