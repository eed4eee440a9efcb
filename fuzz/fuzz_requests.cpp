// Request lines (mstar-run --requests): requests, cancellations, snapshots
// and resumes, through the real scheduler of a speech or a frames engine
// (the first byte chooses), with the run's invariants checked (engines.h).
#include "engines.h"

using namespace mstar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  std::vector<RequestLine> lines;
  try {
    lines = read_request_lines(in, "fuzz");
  } catch (const InputError&) {
    return 0;  // over the line limits: mstar-run refuses the whole input
  }
  fuzz::drive(fuzz::engine(data[0] & 1), std::move(lines), 24);
  return 0;
}
