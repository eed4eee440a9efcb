#include "config/yaml_source.h"

#include <fstream>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/files.h"

namespace mstar {

namespace {

// Finds the first byte that is not valid UTF-8 (or is NUL); returns its
// offset, or npos.
std::size_t bad_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return i;
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return i;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return i;
    // Overlong forms and surrogates are not UTF-8 either.
    if (n == 2 && c < 0xc2) return i;
    if (n == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0)) return i;
    }
    if (n == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xf0 && c1 < 0x90) || c > 0xf4 || (c == 0xf4 && c1 >= 0x90)) return i;
    }
    i += n;
  }
  return std::string::npos;
}

std::pair<int64_t, int64_t> line_col(const std::string& s, std::size_t offset) {
  int64_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < s.size(); ++i) {
    if (s[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return {line, col};
}

// Walks the parser's events looking for anchors and aliases.
class AnchorFinder : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> found;
  std::optional<YAML::Mark> stuck;  // where a document started at the previous one's start
  void OnDocumentStart(const YAML::Mark& m) override {
    if (last_start_ && last_start_->pos == m.pos && !stuck) stuck = m;
    last_start_ = m;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { note(m, a); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    if (!found) found = m;
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a, const std::string&) override { note(m, a); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    note(m, a);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    note(m, a);
  }
  void OnMapEnd() override {}

 private:
  std::optional<YAML::Mark> last_start_;
  void note(const YAML::Mark& m, YAML::anchor_t a) {
    if (a != YAML::NullAnchor && !found) found = m;
  }
};

}  // namespace

std::optional<YAML::Node> load_yaml_text(const std::string& text, const std::string& label, Diagnostics& diags) {
  if (const std::size_t bad = bad_utf8(text); bad != std::string::npos) {
    const auto [l, c] = line_col(text, bad);
    diags.error(label, l, c,
                fmt::format("byte 0x{:02x} at offset {} is not valid UTF-8 text (is this a binary file?)",
                            static_cast<unsigned char>(text[bad]), bad));
    return std::nullopt;
  }
  // Tabs may not indent YAML; yaml-cpp's own message for them is obscure.
  std::size_t line_start = 0;
  for (int64_t line = 1; line_start < text.size(); ++line) {
    std::size_t i = line_start;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) {
      if (text[i] == '\t') {
        diags.error(label, line, static_cast<int64_t>(i - line_start) + 1,
                    "a tab in indentation; YAML indents with spaces");
        return std::nullopt;
      }
      ++i;
    }
    const std::size_t nl = text.find('\n', line_start);
    line_start = nl == std::string::npos ? text.size() : nl + 1;
  }
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    AnchorFinder finder;
    // yaml-cpp 0.7 does not consume a ',' outside [ ] or { } (a flow entry in
    // block context): every further document starts at that same ',' and
    // the stream never ends (the fuzzers found ", !c " and "- a\n, b").
    // A document that starts where the one before it did has read nothing,
    // so the walk stops there; and past the second document, the file is
    // refused anyway.
    int documents = 0;
    while (documents < 3 && parser.HandleNextDocument(finder)) {
      ++documents;
      if (finder.stuck) {
        const YAML::Mark& m = *finder.stuck;
        // yaml-cpp's offset: bytes of UTF-8 text, a byte-order mark not counted
        // (the general message then).
        const auto at = static_cast<std::size_t>(m.pos);
        diags.error(label, m.line + 1, m.column + 1,
                    m.pos >= 0 && at < text.size() && text[at] == ','
                        ? std::string("unexpected ',': outside [ ] or { } a comma cannot start a value")
                        : std::string("the YAML parser cannot go on from here"));
        return std::nullopt;
      }
    }
    if (finder.found) {
      diags.error(label, finder.found->line + 1, finder.found->column + 1,
                  "anchors and aliases (&name, *name) are not allowed in mstar files; write the value out");
      return std::nullopt;
    }
    if (documents > 1) {
      diags.error(label, 0, 0, "more than one YAML document in one file; mstar reads exactly one");
      return std::nullopt;
    }
    YAML::Node root = YAML::Load(text);
    if (!root || root.IsNull()) {
      diags.error(label, 1, 1, "the file is empty; expected a mapping of keys");
      return std::nullopt;
    }
    return root;
  } catch (const YAML::Exception& e) {
    diags.error(label, e.mark.line + 1, e.mark.column + 1,
                e.msg == "bad file" ? "nesting too deep or input unreadable as YAML" : e.msg);
    return std::nullopt;
  }
}

std::optional<YAML::Node> load_yaml_file(const std::filesystem::path& path, const std::string& label,
                                         Diagnostics& diags) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    diags.error(label, 0, 0, "no such file");
    return std::nullopt;
  }
  if (std::filesystem::is_directory(status)) {
    diags.error(label, 0, 0, "is a directory, not a YAML file");
    return std::nullopt;
  }
  if (!std::filesystem::is_regular_file(status)) {
    diags.error(label, 0, 0, "is not a regular file (a device, socket or pipe?)");
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags.error(label, 0, 0, "cannot be opened for reading");
    return std::nullopt;
  }
  // At most one byte past the limit, in pieces (core/files.h): a file that
  // lies about its size (/proc, say) cannot make us read forever, and a small
  // file costs its size, not the limit (a 1 MiB buffer zero-filled per file
  // was most of the time a deployment took to load).
  std::string text;
  try {
    text = read_stream(in, kMaxConfigBytes, label);
  } catch (const InputError&) {
    diags.error(label, 0, 0,
                in.bad() ? std::string("reading failed")
                         : fmt::format("larger than {} bytes; not a config file", kMaxConfigBytes));
    return std::nullopt;
  }
  return load_yaml_text(text, label, diags);
}

}  // namespace mstar
