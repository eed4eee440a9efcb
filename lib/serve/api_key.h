#pragma once
// The API key of mstar-serve (--api-key, --api-key-file): with one set,
// every request but GET /v1/health must carry "Authorization: Bearer KEY",
// and any other request is answered 401 and nothing else (server.cpp).
#include <filesystem>
#include <string>
#include <string_view>

namespace mstar::serve {

// Keys are 1 to 4,096 printable ASCII characters without spaces, so one
// fits an HTTP header as written. Throws InputError naming `where` and why.
void check_api_key(std::string_view key, std::string_view where);

// The key in a file (--api-key-file, so that it is not on the command line
// where `ps` shows it): the file's bytes less one trailing newline ("\n" or
// "\r\n"), checked as check_api_key does. Only a regular file.
std::string read_api_key_file(const std::filesystem::path& path);

// Whether an Authorization header's value is "Bearer KEY" (the scheme in any
// case, as HTTP's are). The key is compared in a time that depends on the
// key's length only, never on where a guess first differs, so timing does
// not tell a client how much of a guess is right.
[[nodiscard]] bool bearer_matches(std::string_view authorization, std::string_view key);

}  // namespace mstar::serve
