#include "engine/engine.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "core/files.h"
#include "core/heap.h"
#include "engine/requests.h"

namespace mstar {

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

Engine::Engine(const ResolvedDeployment& d) : d_(d), started_(Clock::now()) {}

std::unique_ptr<Engine> Engine::create(const ResolvedDeployment& d, const Progress& progress) {
  std::unique_ptr<Engine> e(new Engine(d));
  const ModelManifest& m = e->d_.model;
  const ProgramKind* kind = find_program(m.family->task);
  MSTAR_ASSERT(kind, fmt::format("no program serves task '{}'", m.family->task));
  const ModelOptions options = model_options(e->d_.deployment);
  e->weights_ = std::make_unique<Weights>(m.load_weights(options.backend, progress));
  e->model_ = m.family->make(*m.arch, *e->weights_, options);
  e->kv_ = std::make_unique<ResourceSet>(m.resource_specs(), ResourceOptions{options.backend, options.threads});
  e->program_ = kind->make(*e->model_, e->d_);
  // The deployment reader refuses this too; an embedder's hand-made
  // deployment must not reach a scheduler that can never admit anyone.
  if (e->program_->rows_per_request() > e->d_.deployment.scheduler.max_batch)
    throw ConfigError(fmt::format("scheduler.max_batch {} is smaller than the {} rows one request needs",
                                  e->d_.deployment.scheduler.max_batch, e->program_->rows_per_request()));
  e->program_->prepare(*e->kv_);
  e->fingerprints_ = fingerprints(e->d_);
  e->max_snapshot_bytes_ = max_snapshot_bytes(m.resource_specs());
  e->stats_.unit = std::string(e->program_->unit());
  e->stats_.weights_bytes = e->weights_->bytes();
  e->ready_ = Clock::now();
  return e;
}

std::string Engine::submit(nlohmann::json request) {
  std::string id;
  try {
    id = request_id(request);
  } catch (const InputError&) {
  }
  std::lock_guard lock(inbox_mutex_);
  inbox_.push_back({Inbox::Kind::submit, id, std::move(request), {}, {}});
  return id;
}

void Engine::cancel(std::string id) {
  std::lock_guard lock(inbox_mutex_);
  inbox_.push_back({Inbox::Kind::cancel, std::move(id), {}, {}, {}});
}

void Engine::cancel_all() {
  std::lock_guard lock(inbox_mutex_);
  inbox_.push_back({Inbox::Kind::cancel_all, {}, {}, {}, {}});
}

void Engine::reject(std::string id, std::string message) {
  std::lock_guard lock(inbox_mutex_);
  inbox_.push_back({Inbox::Kind::reject, std::move(id), {}, std::move(message), {}});
}

void Engine::snapshot(std::string id, std::filesystem::path path) {
  std::lock_guard lock(inbox_mutex_);
  inbox_.push_back({Inbox::Kind::snapshot, std::move(id), {}, {}, std::move(path)});
}

void Engine::resume(std::filesystem::path path, std::string id) {
  std::lock_guard lock(inbox_mutex_);
  inbox_.push_back({Inbox::Kind::resume, std::move(id), {}, {}, std::move(path)});
}

bool Engine::idle() const {
  std::lock_guard lock(inbox_mutex_);
  return inbox_.empty() && waiting_.empty() && running_.empty();
}

void Engine::error(const std::string& id, const std::string& message, std::vector<Event>& events) {
  ++stats_.requests_failed;
  events.push_back({nlohmann::json{{"event", "error"}, {"id", id}, {"message", message}}, {}});
}

void Engine::releasing_states(const Live& live) {
  if (!live.pending_state.empty()) freed_snapshot_buffers_ = true;
}

void Engine::fail(std::unique_ptr<Live> live, const std::string& message, std::vector<Event>& events) {
  releasing_states(*live);
  kv_->remove_request(live->id);
  error(live->id, message, events);
}

void Engine::op_error(const char* op, const std::string& id, const std::string& message, std::vector<Event>& events,
                      const std::filesystem::path& path) {
  nlohmann::json e{{"event", "error"}, {"op", op}, {"id", id}, {"message", message}};
  if (!path.empty()) e["path"] = path.string();
  events.push_back({std::move(e), {}});
}

Live* Engine::find_live(const std::string& id) const {
  for (const auto& l : waiting_)
    if (l->id == id) return l.get();
  for (const auto& l : running_)
    if (l->id == id) return l.get();
  return nullptr;
}

bool Engine::in_use(const std::string& id) const { return find_live(id) != nullptr; }

void Engine::take_snapshot(const Inbox& item, std::vector<Event>& events) {
  freed_snapshot_buffers_ = true;  // the states and their encoding, gone when this returns
  const Live* live = find_live(item.id);
  if (!live)
    return op_error("snapshot", item.id, fmt::format("snapshot: no waiting or running request '{}'", item.id), events,
                    item.path);
  try {
    SnapshotContent c;
    c.task = d_.model.family->task;
    c.id = item.id;
    c.program = program_->save(*live);
    // A resumed request not yet admitted still carries the states it came with.
    c.resources = live->pending_state.empty() ? kv_->save(item.id) : copy_states(live->pending_state);
    const std::string bytes = encode_snapshot(c, fingerprints_, d_.model.resource_specs());
    write_file_atomic(item.path, bytes);
    events.push_back({nlohmann::json{{"event", "snapshot"}, {"id", item.id}, {"path", item.path.string()},
                                     {"bytes", bytes.size()}},
                      {}});
  } catch (const InputError& e) {
    op_error("snapshot", item.id, fmt::format("snapshot: {}", e.what()), events, item.path);
  }
}

void Engine::take_resume(const Inbox& item, std::vector<Event>& events) {
  freed_snapshot_buffers_ = true;  // the file's bytes, gone when this returns
  const std::string name = item.path.string();
  std::string id = item.id;
  try {
    SnapshotContent c = decode_snapshot(read_regular_file(item.path, max_snapshot_bytes_, name), name, fingerprints_,
                                        d_.model.family->task, d_.model.resource_specs());
    if (id.empty()) id = c.id;
    // One id, one live stream, as for a submitted request.
    if (in_use(id))
      return error(id, fmt::format("resume: request '{}': a request with this id is already waiting or running", id),
                   events);
    std::unique_ptr<Live> live = program_->restore(c.program, id);
    live->arrived = Clock::now();
    kv_->ingest_request(id);
    try {
      kv_->restore_position(id, c.resources);
    } catch (...) {
      kv_->remove_request(id);
      throw;
    }
    live->pending_state = std::move(c.resources);
    nlohmann::json resumed{{"event", "resumed"}, {"id", id}, {"path", name}};
    resumed.update(program_->progress(*live));
    events.push_back({std::move(resumed), {}});
    ++stats_.requests_resumed;
    waiting_.push_back(std::move(live));
  } catch (const InputError& e) {
    error(id.empty() ? "?" : id, fmt::format("resume: {}", e.what()), events);
  }
}

void Engine::take(Inbox item, std::vector<Event>& events) {
  switch (item.kind) {
    case Inbox::Kind::reject: return error(item.id, item.message, events);
    case Inbox::Kind::cancel_all: {
      std::vector<std::string> ids;
      for (const auto& l : waiting_) ids.push_back(l->id);
      for (const auto& l : running_) ids.push_back(l->id);
      for (std::string& id : ids) take({Inbox::Kind::cancel, std::move(id), {}, {}, {}}, events);
      return;
    }
    case Inbox::Kind::cancel: {
      auto drop = [&](auto& list) {
        for (auto it = list.begin(); it != list.end(); ++it)
          if ((*it)->id == item.id) {
            nlohmann::json done{{"event", "done"}, {"id", item.id}, {"reason", "cancelled"}};
            done.update(program_->progress(**it));
            releasing_states(**it);
            kv_->remove_request(item.id);
            list.erase(it);
            ++stats_.requests_cancelled;
            events.push_back({std::move(done), {}});
            return true;
          }
        return false;
      };
      if (!drop(waiting_) && !drop(running_))
        op_error("cancel", item.id, fmt::format("cancel: no waiting or running request '{}'", item.id), events);
      return;
    }
    case Inbox::Kind::snapshot: return take_snapshot(item, events);
    case Inbox::Kind::resume: return take_resume(item, events);
    case Inbox::Kind::submit: {
      if (item.id.empty()) {
        try {
          request_id(item.request);
        } catch (const InputError& e) {
          return error("?", e.what(), events);
        }
      }
      // One id, one live stream: a second request under a running id is refused alone.
      if (in_use(item.id))
        return error(item.id, fmt::format("request '{}': a request with this id is already waiting or running", item.id),
                     events);
      std::unique_ptr<Live> live;
      try {
        live = program_->start(item.request);
      } catch (const InputError& e) {
        return error(item.id, e.what(), events);
      }
      live->arrived = Clock::now();
      kv_->ingest_request(live->id);
      waiting_.push_back(std::move(live));
      return;
    }
  }
}

void Engine::admit(std::vector<Event>& events) {
  const int64_t R = program_->rows_per_request(), max_rows = d_.deployment.scheduler.max_batch;
  for (;;) {
    size_t joining = 0;
    int64_t rows = static_cast<int64_t>(running_.size()) * R;
    while (joining < waiting_.size() && rows + R <= max_rows) ++joining, rows += R;
    for (;;) {
      step_ = {};
      ctx_ = {};
      for (const auto& l : running_) program_->describe(*l, step_, ctx_);
      for (size_t i = 0; i < joining; ++i) program_->describe(*waiting_[i], step_, ctx_);
      const AdmitOutcome out = kv_->admit(step_, ctx_);
      if (out.ok()) {
        for (size_t i = 0; i < joining; ++i) {
          Live& l = *waiting_.front();
          // A resumed request's slots and sessions are claimed now: its
          // entries go in before the step runs (checked when it was resumed).
          if (!l.pending_state.empty()) {
            kv_->load(l.id, l.pending_state);
            releasing_states(l);
            l.pending_state.clear();
          }
          running_.push_back(std::move(waiting_.front()));
          waiting_.pop_front();
        }
        stats_.admission_waits += static_cast<int64_t>(waiting_.size());
        return;
      }
      if (out.kind == AdmitOutcome::Kind::refused) {
        // The request the resources name fails alone; the step is tried again without it.
        auto drop = [&](auto& list) {
          for (auto it = list.begin(); it != list.end(); ++it)
            if ((*it)->id == out.request) {
              std::unique_ptr<Live> l = std::move(*it);
              list.erase(it);
              fail(std::move(l), out.reason, events);
              return true;
            }
          return false;
        };
        MSTAR_ASSERT(drop(running_) || drop(waiting_), "a resource refused a request that is not in the step: " + out.reason);
        break;  // recount the joiners
      }
      // Refused for now: the newest joiner waits, so the head of the queue
      // only ever waits for capacity and nobody starves.
      MSTAR_ASSERT(joining > 0, "running requests hold their claims, so their step cannot wait: " + out.reason);
      --joining;
    }
  }
}

std::vector<Event> Engine::step() {
  std::vector<Event> events;
  run_step(events);
  if (freed_snapshot_buffers_) {
    return_free_heap();
    freed_snapshot_buffers_ = false;
  }
  return events;
}

void Engine::run_step(std::vector<Event>& events) {
  std::vector<Inbox> inbox;
  {
    std::lock_guard lock(inbox_mutex_);
    inbox.swap(inbox_);
  }
  for (Inbox& item : inbox) take(std::move(item), events);
  if (running_.empty() && waiting_.empty()) return;

  const auto start = Clock::now();
  admit(events);
  if (running_.empty()) return;
  peak_in_use_.resize(static_cast<size_t>(kv_->size()));
  for (int64_t i = 0; i < kv_->size(); ++i)
    peak_in_use_[static_cast<size_t>(i)] = std::max(peak_in_use_[static_cast<size_t>(i)], kv_->at(i).occupancy().in_use);

  kv_->plan(step_, ctx_);
  std::vector<Live*> batch;
  for (auto& l : running_) batch.push_back(l.get());
  const auto forward_start = Clock::now();
  program_->forward(*kv_, step_, ctx_, batch);
  double forward_ms = ms_since(forward_start);  // the model's work; sampling is added below
  kv_->commit(step_, ctx_);

  std::vector<std::unique_ptr<Live>> still;
  for (auto& l : running_) {
    const auto emit_start = Clock::now();
    const Program::Emitted out = program_->emit(*l, [&](Event e) {
      // A token is produced every step, a chunk event every chunk_tokens:
      // the first of each is timed apart.
      if (!l->chunk_sent && (e.body["event"] == "chunk" || e.body["event"] == "frame")) {
        l->chunk_sent = true;
        stats_.first_chunk_ms.add(ms_since(l->arrived));
      }
      events.push_back(std::move(e));
    });
    forward_ms += ms_since(emit_start);
    if (out.produced > 0 && l->first_output_at_step < 0) {
      l->first_output_at_step = stats_.steps;
      stats_.first_output_ms.add(ms_since(l->arrived));
    }
    stats_.produced += out.produced;
    if (out.finished.empty()) {
      still.push_back(std::move(l));
      continue;
    }
    nlohmann::json done{{"event", "done"}, {"id", l->id}, {"reason", out.finished}};
    done.update(program_->progress(*l));
    events.push_back({std::move(done), {}});
    ++stats_.requests_done;
    kv_->remove_request(l->id);
  }
  running_ = std::move(still);
  const double step_ms = ms_since(start);
  stats_.step_ms.add(step_ms);
  stats_.host_ms.add(step_ms - forward_ms);
  ++stats_.steps;
}

RunStats Engine::stats() const {
  RunStats s = stats_;
  s.seconds = std::chrono::duration<double>(Clock::now() - ready_).count();
  s.load_seconds = std::chrono::duration<double>(ready_ - started_).count();
  for (int64_t i = 0; i < kv_->size(); ++i) {
    const Resource& r = kv_->at(i);
    const Occupancy o = r.occupancy();
    const int64_t peak = static_cast<size_t>(i) < peak_in_use_.size() ? peak_in_use_[static_cast<size_t>(i)] : 0;
    s.resources.push_back({r.key(), std::string(r.type()), r.memory_bytes(), o.capacity, peak});
  }
  s.peak_rss_bytes = peak_rss_bytes();
  return s;
}

}  // namespace mstar
