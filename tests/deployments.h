#pragma once
// Deployments for tests, loaded as mstar-run loads them (load_deployment,
// --set overrides): a test that cannot load its deployment fails with the
// diagnostics.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/program.h"

namespace mstar::test {

inline ResolvedDeployment load_or_fail(const std::filesystem::path& config, const std::vector<std::string>& sets = {}) {
  Diagnostics d;
  std::vector<SetOverride> so;
  for (const auto& s : sets) so.push_back(parse_set(s));
  auto r = load_deployment(config, so, d);
  REQUIRE_MESSAGE(r, d.str());
  return *r;
}

// A shipped deployment, configs/NAME.
inline ResolvedDeployment shipped(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_or_fail(std::filesystem::path(MSTAR_SOURCE_DIR) / "configs" / name, sets);
}

// Steps `engine` until it is idle: each request's streamed tokens, by id.
// An error event fails the test.
inline std::map<std::string, std::vector<int32_t>> streamed_tokens(Engine& engine) {
  std::map<std::string, std::vector<int32_t>> tokens;
  while (!engine.idle())
    for (const Event& e : engine.step()) {
      REQUIRE_MESSAGE(e.body["event"] != "error", e.body.dump());
      if (e.body["event"] == "chunk")
        for (int32_t t : e.body["tokens"]) tokens[e.body["id"]].push_back(t);
    }
  return tokens;
}

}  // namespace mstar::test
