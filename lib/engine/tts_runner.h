#pragma once
// The tts scheduler loop: voices prefilled once into shared sources, then
// requests prefill their conditioning tokens and decode one token a step,
// streaming chunks, until max_tokens or the end token.
#include "engine/run.h"

namespace mstar {

RunStats run_tts(const ResolvedDeployment& d, const Weights& weights, std::vector<RequestItem> items,
                 const RunOptions& options, const EventSink& events);

}  // namespace mstar
