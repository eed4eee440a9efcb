#include "choice_args.h"

// doctest itself, for both programs that link this file.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>

namespace mstar::test {

ChoiceArgs parse_choice_args(int argc, const char* const* argv, std::string_view flag, std::string_view noun,
                             const std::vector<std::string>& names,
                             const std::function<std::string(std::size_t)>& why_skipped) {
  ChoiceArgs a;
  const std::string program = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "PROGRAM";
  std::string usage = "usage: " + program + " --" + std::string(flag) + " ";
  for (std::size_t i = 0; i < names.size(); ++i) usage += (i ? "|" : "") + names[i];
  usage += " [doctest options]";
  if (argc < 3 || std::string_view(argv[1]) != "--" + std::string(flag)) {
    a.exit_code = kUsage;
    a.message = usage;
    return a;
  }
  const std::string_view name = argv[2];
  for (std::size_t i = 0; i < names.size(); ++i)
    if (name == names[i]) {
      a.choice = i;
      a.rest = 3;
      if (std::string why = why_skipped(i); !why.empty()) {
        a.exit_code = kSkipped;
        a.message = "skipped: " + why;
      }
      return a;
    }
  a.exit_code = kUsage;
  a.message = "unknown " + std::string(noun) + " '" + std::string(name) + "'\n" + usage;
  return a;
}

int run_choice(int argc, const char* const* argv, const ChoiceArgs& a, std::string_view under_test) {
  if (a.exit_code >= 0) {
    std::fprintf(a.exit_code == kSkipped ? stdout : stderr, "%s\n", a.message.c_str());
    return a.exit_code;
  }
  std::printf("%.*s\n", static_cast<int>(under_test.size()), under_test.data());
  std::vector<const char*> rest{argv[0]};
  for (int i = a.rest; i < argc; ++i) rest.push_back(argv[i]);
  doctest::Context context;
  context.applyCommandLine(static_cast<int>(rest.size()), rest.data());
  return context.run();
}

}  // namespace mstar::test
