#pragma once
// What the libFuzzer harnesses share. Each harness feeds one input surface
// to the library that reads it, exactly as mstar's programs do, and lets
// AddressSanitizer, UndefinedBehaviorSanitizer and its own invariant checks
// (abort) report anything wrong. Every harness writes only inside its own
// scratch directory, removed when it exits.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

// At file scope: the harnesses name paths outside mstar::fuzz too.
namespace fs = std::filesystem;

namespace mstar::fuzz {

inline const fs::path& source_dir() {
  static const fs::path dir = MSTAR_SOURCE_DIR;
  return dir;
}

// This process's scratch directory.
inline const fs::path& scratch() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("mstar-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("mstar-fuzz-" + std::to_string(::getpid())), ec);
    });
    return d;
  }();
  return dir;
}

inline void write(const fs::path& p, const uint8_t* data, size_t size) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

inline void write(const fs::path& p, const std::string& s) {
  write(p, reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// A broken invariant found by a harness: reported like a crash.
[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

// A symbolic link at `at` to `target`, made once.
inline void link(const fs::path& target, const fs::path& at) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(at, ec))) fs::create_directory_symlink(target, at, ec);
}

}  // namespace mstar::fuzz
