#pragma once
// The bounded resource's host bookkeeping: which requests exist, which slot
// each holds, how much of its stream is committed, and which sources are
// registered. No buffer lives here (the manager owns those), so every
// lifecycle rule is tested without allocating a cache.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "resources/bounded_kv/config.h"
#include "resources/bounded_kv/layout.h"
#include "resources/resource.h"
#include "resources/slot_pool.h"

namespace mstar {

struct BoundedRequest {
  std::optional<int32_t> slot;
  int64_t written = 0;  // committed entries past the source
  // The source the stream started on; fixed while written > 0.
  int source = 0;
  int64_t source_len = 0;
};

// What a step becomes on the host: one layout per row plus what the kernels
// need to find each row's source and step entries.
struct BoundedKVPlan {
  std::vector<RowLayout> rows;          // [rows]
  std::vector<int> source_of_row;       // registered source id, or -1 for none
  std::vector<int64_t> source_len;      // [rows]: entries of the row's source (0 for none)
  std::vector<int32_t> row_in_request;  // k-th row of its request (0 for padding)
  std::vector<int32_t> kv_indptr;       // [rows + 1]: row r writes kv_indptr[r+1] - kv_indptr[r] entries
  // Entries the row attends before its own (its retained entries), the
  // ordinal its first step entry has in cache positions.
  int64_t retained(size_t row) const;
};

class BoundedKVBook {
 public:
  explicit BoundedKVBook(const BoundedKVConfig& config);

  const BoundedKVConfig& config() const { return config_; }

  // Sources: read-only prefixes shared by every request that names them.
  void register_source(int id, int64_t len);
  void remove_source(int id);
  std::optional<int64_t> source_len(int id) const;
  // Requests whose committed stream reads the source.
  int64_t source_users(int id) const;

  void ingest(const std::string& rid);
  [[nodiscard]] AdmitOutcome check(const Step& step, const StepContext& ctx) const;
  // After check accepted the step: slots for the requests that hold none.
  void claim(const Step& step, const StepContext& ctx);
  // check, then claim when accepted.
  [[nodiscard]] AdmitOutcome admit(const Step& step, const StepContext& ctx);
  BoundedKVPlan plan(const Step& step, const StepContext& ctx) const;
  void commit(const Step& step, const StepContext& ctx);
  void reset(const std::string& rid, OnReset what);
  void remove(const std::string& rid);
  // Sets a request's committed stream (a restored state): its written count
  // and the source it started on, so the next step's declaration is checked
  // against them. Throws InputError when the request is unknown or the
  // position is impossible here (an unregistered source, a length that
  // source does not have).
  void restore(const std::string& rid, int64_t written, int source, int64_t length);

  const BoundedRequest* find(const std::string& rid) const;
  const SlotPool& pool() const { return pool_; }
  int64_t requests() const { return static_cast<int64_t>(requests_.size()); }

 private:
  const BoundedRequest& known(const std::string& rid, const char* op) const;

  BoundedKVConfig config_;
  SlotPool pool_;
  std::map<std::string, BoundedRequest> requests_;
  std::map<int, int64_t> sources_;  // id -> length
};

}  // namespace mstar
