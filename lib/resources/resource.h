#pragma once
// The contract every resource (bounded KV, ring KV) keeps with the
// scheduler. A step goes through it in this order:
//
//   check   may the step run? Pure: looks at the step and the bookkeeping,
//           changes nothing. A refusal is for now (retry: a pool is full)
//           or for good (refused: the step is malformed, naming whose).
//   claim   takes what new requests need (a slot, a session); only after
//           every resource of the step has checked it, so a step is
//           admitted by all of them or by none and a refusal leaves nothing
//           to roll back. Claiming the same step again claims nothing more.
//   plan    stages the step's tables for the ops. Reads the declared
//           positions, never a previous forward's results, so planning twice
//           is harmless.
//   (forward: the model writes and attends through the resource's ops)
//   commit  the only call that changes what a later step reads: it
//           advances each request's stream (or clock) from the declaration,
//           so committing the same step twice is harmless.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mstar {

// The most memory one resource may ask for, whatever the machine: a config
// whose storage would pass it is refused by validate(), naming the size.
// (Against the machine's own memory, see options.h.)
constexpr uint64_t kMaxResourceBytes = uint64_t{1} << 40;

// What check decided, for the whole step.
struct [[nodiscard]] AdmitOutcome {
  enum class Kind : uint8_t {
    ok,
    retry,    // refused for now: a pool is full, nothing is wrong with the step
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

// Where a request's stream stands when a step starts (bounded resources).
struct StreamPosition {
  int64_t source_len = 0;
  int64_t written = 0;
  int source = 0;  // which registered source (ignored when source_len == 0)
  bool operator==(const StreamPosition&) const = default;
};

// A step, as every resource reads it: the segments, and what each kind of
// resource needs declared per request. The declarations come from the model,
// not the resources, so a plan never waits on the previous step's commit.
struct Step {
  std::vector<Segment> segments;
  std::map<std::string, StreamPosition> streams;  // bounded resources: each request's stream
  std::map<std::string, int64_t> frames;          // ring resources: the frame each request makes
};

// The batch's rows. A request with rows_per_request R owns R consecutive
// rows; its k-th row is row k of the request (row 1 is the unconditional row
// of classifier-free guidance, say). Padding rows fill a batch up to a fixed
// size: they belong to no request and read and write nothing of anyone's.
struct StepContext {
  std::vector<std::string> request_ids;  // one per row ("" for padding)
  std::vector<uint8_t> is_padding;       // one per row

  int64_t rows() const { return static_cast<int64_t>(request_ids.size()); }
  void add_rows(const std::string& rid, int n);
  void add_padding(int n);
};

class ResourceState;  // resource_spec.h

// What reset_request does with the request's claim.
enum class OnReset : uint8_t { keep_claim, release };

// How full a resource's pool is.
struct Occupancy {
  int64_t in_use = 0;
  int64_t capacity = 0;
  std::string_view unit;  // "slots" or "sessions"
};

class Resource {
 public:
  virtual ~Resource() = default;
  virtual std::string_view type() const = 0;  // "bounded_kv", "ring_kv"
  virtual const std::string& key() const = 0;

  // Registers a request; claims nothing.
  virtual void ingest_request(const std::string& rid) = 0;
  virtual AdmitOutcome check(const Step& step, const StepContext& ctx) const = 0;
  // Only after check accepted the same step.
  virtual void claim(const Step& step, const StepContext& ctx) = 0;
  // check, then claim when accepted: one resource on its own.
  AdmitOutcome admit(const Step& step, const StepContext& ctx);
  virtual void plan(const Step& step, const StepContext& ctx) = 0;
  virtual void commit(const Step& step, const StepContext& ctx) = 0;
  // Rewinds the request's stream; with OnReset::release also returns its claim.
  virtual void reset_request(const std::string& rid, OnReset what) = 0;
  // The request is gone: its claim and registration are dropped. Removing a
  // request that is not there is harmless.
  virtual void remove_request(const std::string& rid) = 0;

  // Resident bytes of the resource's storage.
  virtual std::size_t memory_bytes() const = 0;
  virtual Occupancy occupancy() const = 0;
  // The requests it knows (registered, holding a claim or not).
  virtual int64_t requests() const = 0;
  // Whether the request holds a claim here (a slot, a session).
  virtual bool holds_claim(const std::string& rid) const = 0;

  // Snapshots (resource_spec.h). A type that keeps nothing to save leaves
  // these: each refuses with InputError naming the resource.
  // The request's state, of this resource's own state type.
  virtual std::unique_ptr<ResourceState> save(const std::string& rid) const;
  // Before the request's first step: its position, so that step is checked
  // against it. InputError, nothing changed, for a state of another type or
  // out of range.
  virtual void restore_position(const std::string& rid, const ResourceState& state);
  // After the step that admitted it claimed: its entries and position.
  virtual void load(const std::string& rid, const ResourceState& state);
};

}  // namespace mstar
