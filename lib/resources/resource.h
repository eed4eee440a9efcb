#pragma once
// The contract every resource (bounded KV, ring KV, ...) keeps with the
// scheduler. A step goes through it in this order:
//
//   admit   may the step run? Claims what new requests need (a slot, a
//           session) and nothing else; admitting the same step again claims
//           nothing more. Refused steps claim nothing.
//   plan    host-side addresses for the forward. Pure: reads the declared
//           positions, never the committed state of a previous step's
//           forward, so planning twice is harmless.
//   (forward: the model upserts and attends through the resource)
//   commit  records what the step wrote. The only call that advances a
//           request's stream; computed from the declaration, so committing
//           the same step twice is harmless.
#include <cstdint>
#include <string>
#include <vector>

namespace mstar {

// What admit decided, for the whole step: a step runs in every resource it
// touches or in none.
struct [[nodiscard]] AdmitOutcome {
  enum class Kind : uint8_t {
    ok,
    retry,    // refused for now: the pool is full, nothing is wrong with the step
    refused,  // refused for good: the step is malformed; `request` says whose
  };
  Kind kind = Kind::ok;
  std::string request;  // the request the refusal is about (empty when ok)
  std::string reason;   // a sentence naming the request and what is wrong

  static AdmitOutcome accept() { return {}; }
  static AdmitOutcome retry_later(std::string rid, std::string why) { return {Kind::retry, std::move(rid), std::move(why)}; }
  static AdmitOutcome refuse(std::string rid, std::string why) { return {Kind::refused, std::move(rid), std::move(why)}; }
  bool ok() const { return kind == Kind::ok; }
};

const char* to_string(AdmitOutcome::Kind k);

// One request's part of a step: `span` entries it writes (0 = reads only).
// `label` says what the segment is for ("prompt", "decode", ...) and only
// appears in messages.
struct Segment {
  std::string request_id;
  std::string label;
  int64_t span = 0;
};

// The batch's rows. A request with rows_per_request R owns R consecutive
// rows; its k-th row is row k of the request (row 1 is the unconditional row
// of classifier-free guidance, say). Padding rows fill a batch up to a fixed
// size: they belong to no request and read and write nothing.
struct StepContext {
  std::vector<std::string> request_ids;  // one per row ("" for padding)
  std::vector<uint8_t> is_padding;       // one per row

  int64_t rows() const { return static_cast<int64_t>(request_ids.size()); }
  // Helpers for the common case: each request's rows in segment order.
  void add_rows(const std::string& rid, int n);
  void add_padding(int n);
};

// What reset_request does with the request's claim.
enum class OnReset : uint8_t { keep_claim, release };

// The lifecycle every resource implements. Step-typed calls (admit, plan,
// commit) live on StepResource below, since each resource declares its own
// step and plan types.
class Resource {
 public:
  virtual ~Resource() = default;
  // Registers a request; claims nothing.
  virtual void ingest_request(const std::string& rid) = 0;
  // Rewinds the request's stream; with OnReset::release also returns its claim.
  virtual void reset_request(const std::string& rid, OnReset what) = 0;
  // The request is gone: its claim and registration are dropped.
  virtual void remove_request(const std::string& rid) = 0;
  // Resident bytes of the resource's storage. Fixed at build.
  virtual std::size_t memory_bytes() const = 0;
};

template <class Step, class Plan>
class StepResource : public Resource {
 public:
  virtual AdmitOutcome admit(const Step& step, const StepContext& ctx) = 0;
  virtual Plan plan(const Step& step, const StepContext& ctx) const = 0;
  virtual void commit(const Step& step, const StepContext& ctx) = 0;
};

}  // namespace mstar
