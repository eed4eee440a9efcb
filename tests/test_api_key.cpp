// mstar-serve's API key (serve/api_key.h): what a key may hold, reading it
// from a file, and the bearer check. The server's use of it is in
// test_serve.cpp.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "serve/api_key.h"

using namespace mstar;
namespace fs = std::filesystem;

namespace {
fs::path written(const std::string& name, const std::string& bytes) {
  const fs::path p = fs::temp_directory_path() / ("mstar-api-key-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}
}  // namespace

TEST_CASE("api key: the bearer check takes exactly the key, the scheme in any case") {
  const std::string key = "s3cret-Key_0123";
  CHECK(serve::bearer_matches("Bearer s3cret-Key_0123", key));
  CHECK(serve::bearer_matches("bearer s3cret-Key_0123", key));
  CHECK(serve::bearer_matches("BEARER s3cret-Key_0123", key));
  CHECK_FALSE(serve::bearer_matches("", key));
  CHECK_FALSE(serve::bearer_matches("s3cret-Key_0123", key));               // no scheme
  CHECK_FALSE(serve::bearer_matches("Basic s3cret-Key_0123", key));         // another scheme
  CHECK_FALSE(serve::bearer_matches("Bearer s3cret-Key_012", key));         // a prefix of the key
  CHECK_FALSE(serve::bearer_matches("Bearer s3cret-Key_01234", key));       // the key and more
  CHECK_FALSE(serve::bearer_matches("Bearer s3cret-key_0123", key));        // another case
  CHECK_FALSE(serve::bearer_matches("Bearer  s3cret-Key_0123", key));       // two spaces
  CHECK_FALSE(serve::bearer_matches("Bearer ", key));
  CHECK_FALSE(serve::bearer_matches(std::string("Bearer s3cret-Key_0123\0", 23), key));
}

TEST_CASE("api key: empty, too long, spaces or control bytes are refused naming where the key came from") {
  CHECK_NOTHROW(serve::check_api_key("abc~!@#$%^&*()", "--api-key"));
  CHECK_THROWS_WITH_AS(serve::check_api_key("", "--api-key"), "--api-key: the API key is empty", InputError);
  CHECK_THROWS_WITH_AS(serve::check_api_key("two words", "--api-key"),
                       "--api-key: the API key holds byte 0x20 at 3: only printable ASCII without spaces", InputError);
  CHECK_THROWS_WITH_AS(serve::check_api_key("tab\there", "--api-key"), doctest::Contains("byte 0x09 at 3"), InputError);
  CHECK_THROWS_WITH_AS(serve::check_api_key("caf\xc3\xa9", "--api-key"), doctest::Contains("byte 0xc3 at 3"), InputError);
  CHECK_THROWS_WITH_AS(serve::check_api_key(std::string(4097, 'k'), "--api-key"),
                       "--api-key: the API key is 4097 characters, more than 4096", InputError);
}

TEST_CASE("api key: a file's one line, its newline dropped, only a regular file") {
  const fs::path lf = written("lf", "from-a-file\n"), crlf = written("crlf", "from-a-file\r\n"), bare = written("bare", "k");
  CHECK(serve::read_api_key_file(lf) == "from-a-file");
  CHECK(serve::read_api_key_file(crlf) == "from-a-file");
  CHECK(serve::read_api_key_file(bare) == "k");
  const fs::path empty = written("empty", ""), newline = written("newline", "\n"), two = written("two", "a\nb\n");
  CHECK_THROWS_WITH_AS(serve::read_api_key_file(empty), doctest::Contains("the API key is empty"), InputError);
  CHECK_THROWS_WITH_AS(serve::read_api_key_file(newline), doctest::Contains("the API key is empty"), InputError);
  CHECK_THROWS_WITH_AS(serve::read_api_key_file(two), doctest::Contains("byte 0x0a at 1"), InputError);
  CHECK_THROWS_WITH_AS(serve::read_api_key_file(two), doctest::Contains(two.c_str()), InputError);
  CHECK_THROWS_WITH_AS(serve::read_api_key_file("/dev/zero"), doctest::Contains("is not a regular file"), InputError);
  CHECK_THROWS_WITH_AS(serve::read_api_key_file("/nonexistent/key"), doctest::Contains("/nonexistent/key"), InputError);
  for (const fs::path& p : {lf, crlf, bare, empty, newline, two}) fs::remove(p);
}
