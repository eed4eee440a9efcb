// Embedding mstar in a C++ program: load a deployment, submit requests from
// another thread while this one steps the engine, print the events. Built by
// the test suite, which checks its events equal mstar-run's.
//   embed CONFIG REQUESTS.jsonl
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "engine/program.h"

int main(int argc, char** argv) {
  if (argc != 3) return std::cerr << "usage: embed CONFIG REQUESTS.jsonl\n", 2;
  mstar::Diagnostics diags;
  auto deployment = mstar::load_deployment(argv[1], {}, diags);
  if (!deployment) return std::cerr << diags.str(), 1;
  auto engine = mstar::Engine::create(*deployment);

  std::thread client([&] {  // any thread may submit (or cancel)
    std::ifstream in(argv[2]);
    for (std::string line; std::getline(in, line);) engine->submit(nlohmann::json::parse(line));
  });
  client.join();  // all submitted before the first step, as mstar-run does at arrival 0

  while (!engine->idle())
    for (const mstar::Event& e : engine->step()) std::cout << e.body.dump() << "\n";
  return 0;
}
