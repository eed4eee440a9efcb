#pragma once
// Long work (loading a checkpoint, a benchmark of many minutes) reports how
// far it is through a Progress, which the program decides where to show:
// mstar's tools draw one line on standard error when it is a terminal and
// --quiet is not given (apps/cli.h), and nothing otherwise. An empty
// Progress reports nowhere.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace mstar {

// `done` of `total` units of `what` ("loading weights": bytes); done ==
// total is the last report of that work.
using Progress = std::function<void(std::string_view what, int64_t done, int64_t total)>;

// "loading weights: 42%": what one report says.
std::string progress_text(std::string_view what, int64_t done, int64_t total);
// A Progress drawing one line on `out`, redrawn in place ("\r") each time
// the whole percent changes and ended with a newline at done == total.
Progress line_progress(std::FILE* out);

}  // namespace mstar
