#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <new>

#include <fmt/format.h>

namespace mstar::tok {
namespace {

// Text made only of code points below U+0300 is already in NFC: nothing there
// decomposes or composes, and the first combining marks start at U+0300.
// Those code points are the bytes below 0xCC in UTF-8 (lead bytes up to 0xCB
// and all continuation bytes).
bool below_u0300(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0xCC) return false;
  return true;
}

}  // namespace

std::string nfc(std::string_view in) {
  if (below_u0300(in)) return std::string(in);
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(in.data()),
                                          static_cast<utf8proc_ssize_t>(in.size()), &out,
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    if (n == UTF8PROC_ERROR_NOMEM) throw std::bad_alloc();
    // The text was validated before it got here; anything else is a bug.
    throw std::logic_error(fmt::format("utf8proc NFC failed: {}", utf8proc_errmsg(n)));
  }
  std::string s(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return s;
}

Normalizer Normalizer::from_json(const JsonAt* j) {
  Normalizer n;
  if (!j) return n;
  j->expect_object();
  const std::string type = j->at("type").str();
  if (type == "NFC") {
    j->only_keys({"type"});
    n.nfc_ = true;
  } else if (type == "Sequence") {
    j->only_keys({"type", "normalizers"});
    const JsonAt list = j->at("normalizers");
    for (size_t i = 0; i < list.size(); ++i) {
      const JsonAt item = list[i];
      item.expect_object();
      const JsonAt t = item.at("type");
      if (t.str() != "NFC") t.unsupported("a normalizer Sequence may only hold NFC");
      item.only_keys({"type"});
      n.nfc_ = true;  // NFC is idempotent: any number of steps is one
    }
  } else {
    j->at("type").unsupported("supported normalizers: null, NFC, a Sequence of NFC");
  }
  return n;
}

std::string_view Normalizer::apply(std::string_view in, std::string& buf) const {
  if (!nfc_ || below_u0300(in)) return in;
  buf = nfc(in);
  return buf;
}

}  // namespace mstar::tok
