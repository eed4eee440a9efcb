#pragma once
// Continuous batching, first come first served, for any kind of request.
// Each step runs every running request plus as many waiting ones, in arrival
// order, as fit in max_rows and are admitted. A step is admitted by every
// resource or by none: when the resources refuse it for now (a full pool),
// the newest joiner waits another step and the rest is tried again, so the
// head of the queue only ever waits for capacity and nobody starves; when
// they refuse it for good, the request they name fails alone and the step is
// tried again without it.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/errors.h"
#include "resources/resource.h"

namespace mstar {

template <class Live>
class Batcher {
 public:
  std::deque<Live> waiting;
  std::vector<Live> running;

  // admit(batch) builds the step for the batch (running first) and returns
  // the resources' outcome; fail(live, reason) reports a request that is
  // dropped. Returns how many waiting requests stayed waiting this step.
  template <class AdmitFn, class FailFn>
  int64_t admit_step(int64_t rows_per_request, int64_t max_rows, AdmitFn&& admit, FailFn&& fail) {
    for (;;) {
      size_t joining = 0;
      int64_t rows = static_cast<int64_t>(running.size()) * rows_per_request;
      while (joining < waiting.size() && rows + rows_per_request <= max_rows) ++joining, rows += rows_per_request;
      for (;;) {
        std::vector<Live*> batch;
        for (auto& r : running) batch.push_back(&r);
        for (size_t i = 0; i < joining; ++i) batch.push_back(&waiting[i]);
        const AdmitOutcome out = admit(batch);
        if (out.ok()) {
          for (size_t i = 0; i < joining; ++i) {
            running.push_back(std::move(waiting.front()));
            waiting.pop_front();
          }
          return static_cast<int64_t>(waiting.size());
        }
        if (out.kind == AdmitOutcome::Kind::refused) {
          if (!drop(out.request, out.reason, fail))
            MSTAR_ASSERT(false, "a resource refused a request that is not in the batch: " + out.reason);
          break;  // recount the joiners
        }
        MSTAR_ASSERT(joining > 0, "running requests hold their claims, so their step cannot wait: " + out.reason);
        --joining;  // the newest joiner waits
      }
    }
  }

  template <class FailFn>
  bool drop(const std::string& id, const std::string& reason, FailFn&& fail) {
    for (auto it = running.begin(); it != running.end(); ++it)
      if (it->id() == id) {
        fail(*it, reason);
        running.erase(it);
        return true;
      }
    for (auto it = waiting.begin(); it != waiting.end(); ++it)
      if (it->id() == id) {
        fail(*it, reason);
        waiting.erase(it);
        return true;
      }
    return false;
  }
};

}  // namespace mstar
