#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include <fmt/format.h>

#include "tokenizer/byte_level.h"
#include "core/utf8.h"

namespace mstar::tok {
namespace {

// Words up to this many symbols merge by scanning the pair ranks (quadratic,
// but short and branch-friendly); longer ones use a priority queue.
constexpr size_t kScanLimit = 48;

// A merge given as "a b" (exactly one space) or as ["a", "b"].
std::pair<std::string, std::string> merge_parts(const JsonAt& m) {
  if (m.json().is_string()) {
    const std::string s = m.str();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
      m.fail(fmt::format("merge {} must be two tokens separated by one space", m.shown()));
    return {s.substr(0, sp), s.substr(sp + 1)};
  }
  if (m.json().is_array() && m.size() == 2) return {m[0].str(), m[1].str()};
  m.fail(fmt::format("merge {} must be \"a b\" or [\"a\", \"b\"]", m.shown()));
}

}  // namespace

std::unique_ptr<BpeModel> BpeModel::from_json(const JsonAt& j) {
  j.expect_object();
  j.only_keys({"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
               "byte_fallback", "ignore_merges", "vocab", "merges"});
  const JsonAt type = j.at("type");
  if (type.str() != "BPE") type.unsupported("mstar implements BPE models only");
  std::unique_ptr<BpeModel> m(new BpeModel());

  if (auto d = j.find("dropout")) {
    if (!d->json().is_number() || d->json().get<double>() != 0.0)
      d->unsupported("dropout makes encoding random; only null or 0 is supported");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (auto v = j.find(key); v && !v->str().empty()) v->unsupported("only null or \"\" is supported");
  }
  m->fuse_unk_ = j.flag("fuse_unk", false);
  m->byte_fallback_ = j.flag("byte_fallback", false);
  m->ignore_merges_ = j.flag("ignore_merges", false);

  const JsonAt vocab = j.at("vocab");
  vocab.expect_object();
  m->by_string_.reserve(vocab.json().size());
  m->by_bytes_.reserve(vocab.json().size());
  for (auto it = vocab.json().begin(); it != vocab.json().end(); ++it) {
    const JsonAt v = vocab.at(it.key());
    const int64_t id = v.integer();
    // Ids index tables (here and in the decoder), so one id of 2^30 would
    // claim GiBs. Gaps are allowed, but the tables stay within twice the
    // vocabulary: ids below 2n + 1024.
    const int64_t id_limit = 2 * static_cast<int64_t>(vocab.json().size()) + 1024;
    if (id < 0 || id >= id_limit)
      v.fail(fmt::format("id {} is out of range: a vocabulary of {} entries takes ids below {}", id,
                         vocab.json().size(), id_limit));
    const auto id32 = static_cast<int32_t>(id);
    if (static_cast<size_t>(id32) >= m->id_to_token_.size()) {
      m->id_to_token_.resize(static_cast<size_t>(id32) + 1);
      m->has_id_.resize(static_cast<size_t>(id32) + 1);
    }
    if (m->has_id_[id32])
      v.fail(fmt::format("id {} is given to both {} and {}", id, nlohmann::json(m->id_to_token_[id32]).dump(),
                         nlohmann::json(it.key()).dump()));
    m->has_id_[id32] = true;
    m->id_to_token_[id32] = it.key();
    m->by_string_.insert(it.key(), id32);
    if (auto bytes = byte_level_decode(it.key())) m->by_bytes_.insert(*bytes, id32);
  }

  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    m->byte_ids_[b] = m->by_bytes_.find(one);
    if (m->byte_fallback_) {
      std::string ch;
      append_utf8(ch, byte_level_char(static_cast<unsigned char>(b)));
      for (char c : ch) {
        const int32_t id = m->by_string_.find(fmt::format("<0x{:02X}>", static_cast<unsigned char>(c)));
        if (id < 0) {
          m->fallback_[b].clear();
          break;
        }
        m->fallback_[b].push_back(id);
      }
    }
  }

  if (auto unk = j.find("unk_token")) {
    m->unk_id_ = m->by_string_.find(unk->str());
    if (m->unk_id_ < 0) unk->fail(fmt::format("unk_token {} is not in model.vocab", unk->shown()));
  }

  const JsonAt merges = j.at("merges");
  const size_t n = merges.size();
  m->merges_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const JsonAt item = merges[i];
    const auto [a, b] = merge_parts(item);
    const int32_t ia = m->by_string_.find(a), ib = m->by_string_.find(b), im = m->by_string_.find(a + b);
    if (ia < 0 || ib < 0 || im < 0) {
      const std::string& missing = ia < 0 ? a : ib < 0 ? b : a + b;
      item.fail(fmt::format("merge {}: {} is not in model.vocab", item.shown(), nlohmann::json(missing).dump()));
    }
    if (i > UINT32_MAX - 1) item.fail("too many merges");
    m->merges_.insert(ia, ib, static_cast<uint32_t>(i), im);
  }
  return m;
}

const std::string* BpeModel::token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

// The reference's merge_word before merging: one symbol per byte-level
// character; an unknown one becomes its <0xXX> tokens (byte_fallback), else
// the unknown token (consecutive ones fused with fuse_unk), else nothing. An
// unknown token waits until the next known character or the end, so byte
// fallback tokens in between come before it, as in the reference.
void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& out) const {
  bool pending_unk = false;
  for (char c : word) {
    const auto b = static_cast<unsigned char>(c);
    const int32_t id = byte_ids_[b];
    if (id >= 0) {
      if (pending_unk) out.push_back(unk_id_);
      pending_unk = false;
      out.push_back(id);
      continue;
    }
    if (byte_fallback_ && !fallback_[b].empty()) {
      out.insert(out.end(), fallback_[b].begin(), fallback_[b].end());
      continue;
    }
    if (unk_id_ >= 0) {
      if (pending_unk && !fuse_unk_) out.push_back(unk_id_);
      pending_unk = true;
    }
  }
  if (pending_unk) out.push_back(unk_id_);
}

void BpeModel::merge_scan(std::vector<int32_t>& sym) const {
  size_t n = sym.size();
  if (n < 2) return;
  thread_local std::vector<uint64_t> rank;
  rank.resize(n - 1);
  for (size_t i = 0; i + 1 < n; ++i) rank[i] = merges_.find(sym[i], sym[i + 1]);
  while (n > 1) {
    size_t best = 0;
    uint64_t best_v = MergeMap::kNone;
    for (size_t i = 0; i + 1 < n; ++i) {
      if (rank[i] < best_v) {
        best_v = rank[i];
        best = i;
      }
    }
    if (best_v == MergeMap::kNone) break;
    sym[best] = MergeMap::merged(best_v);
    sym.erase(sym.begin() + static_cast<ptrdiff_t>(best) + 1);
    rank.erase(rank.begin() + static_cast<ptrdiff_t>(best));
    --n;
    if (best > 0) rank[best - 1] = merges_.find(sym[best - 1], sym[best]);
    if (best + 1 < n) rank[best] = merges_.find(sym[best], sym[best + 1]);
  }
}

void BpeModel::merge_queue(std::vector<int32_t>& sym) const {
  const size_t n = sym.size();
  if (n < 2) return;
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  // (rank, left position): the smallest rank first, then the leftmost.
  using Entry = std::pair<uint32_t, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> q;
  for (size_t i = 0; i + 1 < n; ++i) {
    const uint64_t v = merges_.find(sym[i], sym[i + 1]);
    if (v != MergeMap::kNone) q.push({MergeMap::rank(v), static_cast<int32_t>(i)});
  }
  while (!q.empty()) {
    const auto [r, pos] = q.top();
    q.pop();
    // An entry is stale once either symbol of its pair has changed: the pair
    // now there no longer has this rank.
    if (!alive[pos] || next[pos] < 0) continue;
    const int32_t right = next[pos];
    const uint64_t v = merges_.find(sym[pos], sym[right]);
    if (v == MergeMap::kNone || MergeMap::rank(v) != r) continue;
    sym[pos] = MergeMap::merged(v);
    alive[right] = false;
    next[pos] = next[right];
    if (next[pos] >= 0) prev[next[pos]] = pos;
    if (prev[pos] >= 0) {
      const uint64_t pv = merges_.find(sym[prev[pos]], sym[pos]);
      if (pv != MergeMap::kNone) q.push({MergeMap::rank(pv), prev[pos]});
    }
    if (next[pos] >= 0) {
      const uint64_t nv = merges_.find(sym[pos], sym[next[pos]]);
      if (nv != MergeMap::kNone) q.push({MergeMap::rank(nv), pos});
    }
  }
  size_t w = 0;
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) sym[w++] = sym[i];
  sym.resize(w);
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (word.size() == 1 && byte_ids_[static_cast<unsigned char>(word[0])] >= 0) {
    out.push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  const uint64_t h = hash_bytes(word);
  if (ignore_merges_) {
    const int32_t id = by_bytes_.find(word, h);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (cache_.get(word, h, out)) return;
  thread_local std::vector<int32_t> sym;
  sym.clear();
  initial_symbols(word, sym);
  if (sym.size() <= kScanLimit) {
    merge_scan(sym);
  } else {
    merge_queue(sym);
  }
  cache_.put(word, h, sym.data(), sym.size());
  out.insert(out.end(), sym.begin(), sym.end());
}

}  // namespace mstar::tok
